package machineid_redis

import "github.com/redis/go-redis/v9"

// Key layout, every key under the configured prefix (which carries the hash
// tag, so that one script can touch them all on a Cluster):
//
//	<prefix>LEASE:<id>               string: owner token; PX = lease TTL
//	<prefix>OWNER:<token>            hash {id, after, run}: the token's lease, the
//	                                 mark it inherited, and the run_id of the
//	                                 server process that took it; PX = lease TTL
//	<prefix>MARKS                    hash id -> high-water mark, ms since the
//	                                 Unix epoch on the holders' clocks; no TTL
//	<prefix>IP_MACHINE_ID_MAPPING    hash host -> id (host mode)
//	<prefix>MAX_ID                   string: the last id handed out (host mode)
//	<prefix>START                    string "<run_id> <ms>": the server's time,
//	                                 ms, when a script first read its start
//	                                 in the process run_id names (serverStart)
//
// Scripts touch only keys in the prefix's slot. KEYS carries the fixed keys
// so a Cluster client routes the call to the slot's node; the per-ID and
// per-token keys are built from the prefix inside the script.
//
// Every script is idempotent for one token: go-redis resends a call after
// a network error, and this package calls again after its own timeout, so a
// second run must find the first run's effect and return the same answer.
//
// No script sets a mark more than ahead + slack past the server's time
// (TIME), where ahead is the TTL and slack the holders' bound on their
// clock's offset (machineid.WithMaxClockOffset): the marks are on the
// holders' clocks, and one whose clock reads further ahead gets a mark cut
// to that (capped), rather than push an ID's mark out of reach of every
// holder after it. The restart floor relies on it. A slack of -1 (the
// check off) caps nothing. Every script answers with the server's time in
// µs, against which the Holder checks the holder's clock.

// luaTake is shared by both acquire scripts. Given id (free or already
// ours) and after (the mark this token inherited), it takes the lease,
// raises the mark to until (0: not at all) and returns {id, after, mark,
// server µs}. A retry reuses the after recorded in the owner hash, so it
// does not mistake its own raised mark for a previous holder's.
const luaTake = luaClock + `
local function take(prefix, token, marks, id, after, ttl, untilMs, ahead, slack)
  local owner = prefix .. 'OWNER:' .. token
  redis.call('SET', prefix .. 'LEASE:' .. id, token, 'PX', ttl)
  redis.call('DEL', owner)
  redis.call('HSET', owner, 'id', id, 'after', string.format('%.0f', after), 'run', runID())
  redis.call('PEXPIRE', owner, ttl)
  return {id, after, raise(marks, id, capped(untilMs, ahead, slack)), serverUs()}
end

-- restartFloor returns the mark every ID is taken to have while this
-- server runs: its start, on its clock, plus restart (the TTL plus twice
-- the slack). A server that restarted may have lost, or rolled back to a
-- snapshot, the leases and marks of holders that were running: such a
-- holder was last confirmed before the restart, and no mark was set more
-- than the TTL plus the slack past the server's time then; Redis's clock
-- may have stepped back since, by up to the slack (while it ran, or across
-- the restart), so every lost mark is below the floor. It holds for every take for as long as the server runs, not
-- only soon after the restart: a lost mark is lost for good, and a
-- newcomer whose clock later steps back must still find every tick a dead
-- holder issued below its After, which the generator never issues at or
-- below for as long as it holds the ID. Once the server has been up for
-- restart plus the slack, the floor is in the past on every clock within
-- the bound, and costs a newcomer no wait. The start is read in the run
-- (serverStart), so a call that runs late gets the same floor.
local function restartFloor(prefix, restart)
  return serverStart(prefix) + restart
end

-- markOf returns the id's mark, or floor if that is later.
local function markOf(marks, id, floor)
  return math.max(tonumber(redis.call('HGET', marks, id) or '0'), floor)
end

-- mine returns the id this token already holds, and the after it inherited,
-- or nil: the trace of an earlier run of this call, in this server process.
-- A lease of the token's that another process recorded (a snapshot loaded,
-- a replica promoted) is void: it is deleted, and the take goes on as a
-- new one, whose after includes the restart floor. Its recorded after
-- does not: the holding it came from may have ridden the restart out, and
-- a newcomer may have issued on the id meanwhile, on a server that forgot
-- it (void, in docs/leases.md).
local function mine(prefix, token)
  local owner = prefix .. 'OWNER:' .. token
  local id = redis.call('HGET', owner, 'id')
  if not id or redis.call('GET', prefix .. 'LEASE:' .. id) ~= token then
    return nil
  end
  if redis.call('HGET', owner, 'run') ~= runID() then -- void
    redis.call('DEL', prefix .. 'LEASE:' .. id, owner)
    return nil
  end
  return tonumber(id), tonumber(redis.call('HGET', owner, 'after') or '0')
end

-- pick returns the free ID of lo..hi that a take chooses and its mark (see
-- leaseAcquire), or nil, the number of leases held and the least time, in
-- ms, that any of them has left, when every ID is held. It looks at IDs in
-- order and stops at the first free one whose mark is before now, or is
-- the floor itself (its own mark at or below it).
local function pick(prefix, marks, lo, hi, now, floor)
  local best, bestMark = nil, nil
  local held, left = 0, -1
  for i = lo, hi do
    local pttl = redis.call('PTTL', prefix .. 'LEASE:' .. i)
    if pttl == -2 then
      local m = markOf(marks, i, floor)
      if m < now or m <= floor then
        return i, m
      end
      if best == nil or m < bestMark then
        best, bestMark = i, m
      end
    elseif pttl >= 0 then
      held = held + 1
      if left < 0 or pttl < left then
        left = pttl
      end
    end
  end
  return best, bestMark, held, left
end
`

// luaClock holds the helpers that read the server's clock and keep marks
// within reach of it, shared by every script.
const luaClock = `
-- serverUs returns the server's time in µs since the Unix epoch, which a
-- Lua number holds exactly.
local function serverUs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- serverInfo returns INFO's server section, read once a run.
local info
local function serverInfo()
  if not info then
    info = redis.call('INFO', 'server')
  end
  return info
end

-- runID returns the id of the server process that runs the script (a new
-- one at every start), '' if INFO does not say.
local function runID()
  return string.match(serverInfo(), 'run_id:(%x+)') or ''
end

-- serverMs returns the server's time in ms since the Unix epoch.
local function serverMs()
  return math.floor(serverUs() / 1000)
end

-- serverStart returns when the server started, in ms on its clock: the
-- earlier of two readings, each after the process's start, less a
-- millisecond at most (a reading in whole ms), so after every time read
-- by the processes before it: what the restart floor and a ride rely on
-- (machineid.RestartError), a mark they capped being below start +
-- restart.
--
--   - The end of the second it started in, by its uptime: INFO's
--     uptime_in_seconds counts whole seconds from the second the process
--     started in (a time(NULL)) to its clock, cached no later than TIME,
--     read after INFO; so TIME's whole second less the uptime is that
--     second or a later one, and its end is after the start. Up to a
--     second late; it does not move while the server runs (CONFIG
--     RESETSTAT leaves the uptime alone), except a second later when TIME
--     has just passed the cache's second.
--   - The marker <prefix>START, "<run_id> <ms>": the server's time when a
--     script first read the start in the process that run_id names. A
--     script that finds it missing, or naming another process, sets it to
--     the time now, read by this process, so after its start. Whoever
--     wrote a marker, its time was read by the process it names (a script
--     writes only its own run_id, and replicas and snapshots copy the
--     pair whole), so a marker naming this process holds a time of this
--     process. A restart gives a new run_id; a snapshot loaded, or a
--     replica promoted, carries an older process's run_id, which this one
--     replaces. A flush or an eviction of the marker only sets it later.
--     It is as late as the first call after a restart: the sooner any
--     holder calls, the shorter the pause of the holders riding it out.
--     After a restart that no one called for a while, the uptime keeps
--     the start where it was, so the first newcomers do not wait for a
--     floor counted from their own call.
--
-- Rolling a running process back (DEBUG RELOAD of an older snapshot, say)
-- keeps its run_id and its start: like a flush, outside what the floor
-- covers.
local function serverStart(prefix)
  local up = tonumber(string.match(serverInfo(), 'uptime_in_seconds:(%d+)') or '0') or 0
  local now = serverMs() -- after INFO: see above
  local start = math.min((math.floor(now / 1000) - up + 1) * 1000, now)
  local run = runID()
  if run == '' then
    return start
  end
  local key = prefix .. 'START'
  local owner, at = string.match(redis.call('GET', key) or '', '^(%x+) (%d+)$')
  if owner ~= run then
    at = now
    redis.call('SET', key, run .. ' ' .. string.format('%.0f', now))
  end
  return math.min(tonumber(at), start)
end

-- capped returns to, but no more than ahead + slack past the server's
-- time; to itself for a slack below 0 (the check off).
local function capped(to, ahead, slack)
  if slack < 0 then
    return to
  end
  return math.min(to, serverMs() + ahead + slack)
end

-- raise sets the id's mark to to, if that is higher, and returns the mark.
local function raise(marks, id, to)
  local mark = tonumber(redis.call('HGET', marks, id) or '0')
  if to > mark then
    mark = to
    redis.call('HSET', marks, id, string.format('%.0f', mark))
  end
  return mark
end
`

// leaseAcquire takes the lowest free ID in lo..hi whose mark is already in
// the past on the caller's clock; failing that, the free ID with the lowest
// mark (the lowest such ID), whose holder must then wait for its clock to
// pass the mark. An ID's mark here is its own, or the restart floor if that
// is later (markOf).
//
// Its cost follows the IDs held, not the range: pick stops at the first
// free ID whose mark is before now, or equal to the floor, and so looks at
// the IDs held below it, the free ones below it whose own mark is past both
// the floor and now, and itself. Marks are set no more than the TTL and the
// slack past the server's time, so the free IDs of the second kind are
// those held or freed within about that long (or whose holder's clock ran
// ahead with the cap off). Stopping there chooses what a scan of the whole
// range chooses:
//   - A mark before now: every free ID below it was looked at and had none,
//     so it is the lowest free ID with its mark in the past.
//   - A mark equal to the floor, and not before now: no mark is below the
//     floor, so none is before now, and the lowest mark of all is the
//     floor. Every free ID below this one has a mark above the floor (it
//     would have stopped there), so this is the lowest ID with the lowest
//     mark.
//   - No stop: every free ID's mark is past the floor and not before now,
//     and every one was looked at; the lowest, first found, is chosen.
//
// This holds whatever the floor is: 0, or a time ahead of the clock or
// behind it.
//
// When every ID is held the scan has looked at every lease (as many as the
// IDs held), and answers how many and the least time one has left.
//
//	KEYS[1] marks
//	ARGV    prefix, token, lo, hi, ttl ms, now ms, until ms (0: raise no mark),
//	        ahead ms, restart ms, slack ms (-1: no cap), prefer (-1: none)
//	returns {id, after, mark, server µs}, or {-1, held, least ms left} when
//	every ID is held; after includes the restart floor
//
// An ID to prefer (Claim.Prefer: the ID of a holding riding out a restart)
// is granted if it is in lo..hi and free, before any scan: with its own
// mark, as any take, so the choice costs nothing in safety, only which of
// the free IDs is taken.
var leaseAcquire = redis.NewScript(leaseAcquireSrc)

const leaseAcquireSrc = luaTake + `
local prefix, token, marks = ARGV[1], ARGV[2], KEYS[1]
local lo, hi = tonumber(ARGV[3]), tonumber(ARGV[4])
local ttl, now, untilMs, ahead = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local restart, slack = tonumber(ARGV[9]), tonumber(ARGV[10])
local id, after = mine(prefix, token)
if id then
  return take(prefix, token, marks, id, after, ttl, untilMs, ahead, slack)
end
local floor = restartFloor(prefix, restart)
local prefer = tonumber(ARGV[11] or '-1')
if prefer >= lo and prefer <= hi and redis.call('EXISTS', prefix .. 'LEASE:' .. prefer) == 0 then
  return take(prefix, token, marks, prefer, markOf(marks, prefer, floor), ttl, untilMs, ahead, slack)
end
local best, mark, held, left = pick(prefix, marks, lo, hi, now, floor)
if best == nil then
  return {-1, held, left}
end
return take(prefix, token, marks, best, mark, ttl, untilMs, ahead, slack)
`

// hostAcquire is the host mapping made atomic: the host's ID from the
// mapping, or the next one after MAX_ID (never past hi, never below lo),
// then a lease on it like leaseAcquire's, so a second live process on the
// host is refused rather than sharing the ID.
//
//	KEYS[1] marks, KEYS[2] mapping, KEYS[3] max id
//	ARGV    prefix, token, host, lo, hi, ttl ms, until ms, ahead ms, restart ms, slack ms
//	returns {id, after, mark, server µs} as leaseAcquire; {-1, last} when the
//	range is used up; {-2, id, pttl} when another owner holds the host's ID;
//	{-3, id} when the mapping holds an ID outside lo..hi; {-4} when it holds
//	something that is not a decimal ID; {-5} when max id does not
//
// A decimal ID here is 1 to 15 ASCII digits, which a Lua number holds
// exactly. Anything else ("5.5", "-0", "nan", " 5") is refused: Lua's
// tonumber would accept it, name a lease key the canonical spelling never
// collides with, and hand Redis a number it truncates, so two hosts could
// share an ID.
var hostAcquire = redis.NewScript(hostAcquireSrc)

const hostAcquireSrc = luaTake + `
local function decimal(raw)
  return string.match(raw, '^%d+$') ~= nil and #raw <= 15
end

local prefix, token, marks, mapping, maxid = ARGV[1], ARGV[2], KEYS[1], KEYS[2], KEYS[3]
local host = ARGV[3]
local lo, hi = tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, untilMs, ahead = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local restart, slack = tonumber(ARGV[9]), tonumber(ARGV[10])
local id, after = mine(prefix, token)
if id then
  return take(prefix, token, marks, id, after, ttl, untilMs, ahead, slack)
end
local raw = redis.call('HGET', mapping, host)
if raw and not decimal(raw) then
  return {-4}
end
id = tonumber(raw)
if id == nil then
  local rawMax = redis.call('GET', maxid)
  if rawMax and not decimal(rawMax) then
    return {-5}
  end
  local last = tonumber(rawMax or '0')
  local nxt = math.max(last + 1, lo)
  if nxt > hi then
    return {-1, last}
  end
  redis.call('SET', maxid, nxt)
  redis.call('HSET', mapping, host, nxt)
  id = nxt
elseif id < lo or id > hi then
  return {-3, id}
end
local lease = prefix .. 'LEASE:' .. id
if redis.call('EXISTS', lease) == 1 then
  return {-2, id, redis.call('PTTL', lease)}
end
return take(prefix, token, marks, id, markOf(marks, id, restartFloor(prefix, restart)), ttl, untilMs, ahead, slack)
`

// renew extends the token's lease on id and raises the mark to until,
// capped at ahead + slack past the server's time.
//
//	KEYS[1] marks
//	ARGV    prefix, token, id, ttl ms, until ms, ahead ms, slack ms
//	returns {1, mark, server µs}; {0, server's start ms} when no lease is
//	on id; {-1, server's start ms} when another owner holds it
//
// A lease of the token's that another server process recorded is void, as
// in a take (mine): it came back with a snapshot (or a promoted replica),
// and while this process ran without it, or the one before, another holder
// may have taken id on a server that forgot it. Extending it would let its
// holder issue past the mark it was confirmed, into that holder's ticks;
// the renewal is answered as if no lease were there, and its holder rides
// the restart out up to its confirmed mark (machineid.RestartError).
var renew = redis.NewScript(renewSrc)

const renewSrc = luaClock + `
local prefix, token, marks, id = ARGV[1], ARGV[2], KEYS[1], ARGV[3]
local ttl, untilMs, ahead = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local slack = tonumber(ARGV[7])
local lease = prefix .. 'LEASE:' .. id
local owner = prefix .. 'OWNER:' .. token
local holder = redis.call('GET', lease)
if holder == token and redis.call('HGET', owner, 'run') ~= runID() then -- void
  redis.call('DEL', lease, owner)
  holder = false
end
if holder ~= token then
  if holder then
    return {-1, serverStart(prefix)}
  end
  return {0, serverStart(prefix)}
end
redis.call('PEXPIRE', lease, ttl)
redis.call('PEXPIRE', owner, ttl)
return {1, raise(marks, id, capped(untilMs, ahead, slack)), serverUs()}
`

// release drops the token's lease: the one its owner hash names, and the
// one the caller believes it holds (-1 if none), each only if it is still
// the token's. The mark stays, so the next holder does not reuse the ticks
// this one may have issued, unless the caller says how far it really
// issued (issued ms >= 0): then the mark of the lease the owner hash names
// comes down to that, but never below the mark this token inherited; or,
// if the holder issued past its mark, goes up to that, but never more than
// ahead + slack past the server's time. Looking the lease up by token also
// frees one taken by a call whose answer the caller never saw.
//
//	KEYS[1] marks
//	ARGV    prefix, token, id, issued ms (-1: keep the mark), ahead ms, slack ms
//	returns {n}, the number of leases released
var release = redis.NewScript(luaClock + `
local prefix, token = ARGV[1], ARGV[2]
local issued = tonumber(ARGV[4])
local ahead, slack = tonumber(ARGV[5]), tonumber(ARGV[6])
local owner = prefix .. 'OWNER:' .. token
local ownID = redis.call('HGET', owner, 'id')
local after = tonumber(redis.call('HGET', owner, 'after') or '0')
local n = 0
-- false, not nil, for a missing owner hash: ipairs stops at a nil.
for _, id in ipairs({ownID or false, ARGV[3]}) do
  local lease = prefix .. 'LEASE:' .. tostring(id)
  if id and redis.call('GET', lease) == token then
    redis.call('DEL', lease)
    n = n + 1
    if issued >= 0 and tostring(id) == tostring(ownID) then
      local mark = tonumber(redis.call('HGET', KEYS[1], id) or '0')
      local low = math.max(issued, after)
      if low < mark then
        redis.call('HSET', KEYS[1], id, string.format('%.0f', low))
      elseif issued > mark then
        raise(KEYS[1], id, capped(issued, ahead, slack))
      end
    end
  end
end
redis.call('DEL', owner)
return {n}
`)
