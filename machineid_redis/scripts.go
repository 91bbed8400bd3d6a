package machineid_redis

import "github.com/redis/go-redis/v9"

// Key layout, every key under the configured prefix (which carries the hash
// tag, so that one script can touch them all on a Cluster):
//
//	<prefix>LEASE:<id>               string: owner token; PX = lease TTL
//	<prefix>OWNER:<token>            hash {id, after}: the token's lease and the
//	                                 mark it inherited; PX = lease TTL
//	<prefix>MARKS                    hash id -> high-water mark, ms since the
//	                                 Unix epoch on the holders' clocks; no TTL
//	<prefix>IP_MACHINE_ID_MAPPING    hash host -> id (host mode)
//	<prefix>MAX_ID                   string: the last id handed out (host mode)
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
// (TIME), where ahead is the TTL and slack the safety margin plus the
// allowed clock skew: the marks are on the holders' clocks, and a holder
// whose clock reads further ahead than slack is refused (clockAhead)
// rather than left to push an ID's mark out of reach of every holder
// after it.

// luaTake is shared by both acquire scripts. Given id (free or already
// ours) and after (the mark this token inherited), it takes the lease, raises
// the mark ahead and returns {id, after, mark}. A retry reuses the after
// recorded in the owner hash, so it does not mistake its own raised mark for
// a previous holder's.
const luaTake = luaClock + `
local function take(prefix, token, marks, id, after, ttl, now, ahead, up)
  local owner = prefix .. 'OWNER:' .. token
  redis.call('SET', prefix .. 'LEASE:' .. id, token, 'PX', ttl)
  redis.call('DEL', owner)
  redis.call('HSET', owner, 'id', id, 'after', string.format('%.0f', after))
  redis.call('PEXPIRE', owner, ttl)
  return {id, after, raise(marks, id, now + ahead), up}
end

-- restartUp returns how long the server has been up, in ms, while that is
-- under restart ms, and -1 after. A server that restarted may have lost,
-- or rolled back to a snapshot, the leases and marks of holders that are
-- still running: such a holder was last confirmed before the restart, so
-- its mark is at most restart time + TTL on its clock, and its lease ends
-- by then as well. restart is the TTL plus how far the holders' clocks
-- may differ (WithMaxClockSkew): until that has passed since the restart,
-- every ID's mark is taken to be restart time + restart (restartFloor).
-- uptime_in_seconds is a difference of whole seconds and can read up to a
-- second high, hence the second taken off.
local function restartUp(restart)
  local up = string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)')
  local upMs = math.max((tonumber(up or '0') or 0) - 1, 0) * 1000
  if upMs >= restart then
    return -1
  end
  return upMs
end

-- restartFloor returns the mark every ID is taken to have, given up from
-- restartUp, or 0 when there is none. now is the caller's clock when it
-- sent the call, so a call that runs late gets a floor too low by the
-- delay; the caller, to which up is returned, raises it by measuring from
-- when the answer came instead.
local function restartFloor(now, up, restart)
  if up < 0 then
    return 0
  end
  return now - up + restart
end

-- markOf returns the id's mark, or floor if that is later.
local function markOf(marks, id, floor)
  return math.max(tonumber(redis.call('HGET', marks, id) or '0'), floor)
end

-- mine returns the id this token already holds, and the after it inherited,
-- or nil: the trace of an earlier run of this call.
local function mine(prefix, token)
  local owner = prefix .. 'OWNER:' .. token
  local id = redis.call('HGET', owner, 'id')
  if id and redis.call('GET', prefix .. 'LEASE:' .. id) == token then
    return tonumber(id), tonumber(redis.call('HGET', owner, 'after') or '0')
  end
  return nil
end
`

// luaClock holds the helpers that keep marks within reach of the server's
// time, shared by every script.
const luaClock = `
-- serverMs returns the server's time in ms since the Unix epoch.
local function serverMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- clockAhead returns the server's time if the caller's clock, now, reads
-- more than slack ahead of it, so that a mark now + ahead would be more
-- than ahead + slack past the server's time; else nil.
local function clockAhead(now, slack)
  local srv = serverMs()
  if now > srv + slack then
    return srv
  end
  return nil
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
// mark, whose holder must then wait for its clock to pass the mark.
//
//	KEYS[1] marks
//	ARGV    prefix, token, lo, hi, ttl ms, now ms, ahead ms, restart ms, slack ms
//	returns {id, after, mark, up}, or {-1, held} when every ID is held, or
//	{-6, server ms} when now is more than slack ahead of the server's time;
//	up is the server's uptime in ms while the restart floor applies, else -1
var leaseAcquire = redis.NewScript(luaTake + `
local prefix, token, marks = ARGV[1], ARGV[2], KEYS[1]
local lo, hi = tonumber(ARGV[3]), tonumber(ARGV[4])
local ttl, now, ahead = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local restart, slack = tonumber(ARGV[8]), tonumber(ARGV[9])
local srv = clockAhead(now, slack)
if srv then
  return {-6, srv}
end
local up = restartUp(restart)
local id, after = mine(prefix, token)
if id then
  return take(prefix, token, marks, id, after, ttl, now, ahead, up)
end
local floor = restartFloor(now, up, restart)
local best, bestMark = nil, nil
for i = lo, hi do
  if redis.call('EXISTS', prefix .. 'LEASE:' .. i) == 0 then
    local m = markOf(marks, i, floor)
    if m < now then
      return take(prefix, token, marks, i, m, ttl, now, ahead, up)
    end
    if best == nil or m < bestMark then
      best, bestMark = i, m
    end
  end
end
if best == nil then
  return {-1, hi - lo + 1}
end
return take(prefix, token, marks, best, bestMark, ttl, now, ahead, up)
`)

// hostAcquire is the host mapping made atomic: the host's ID from the
// mapping, or the next one after MAX_ID (never past hi, never below lo),
// then a lease on it like leaseAcquire's, so a second live process on the
// host is refused rather than sharing the ID.
//
//	KEYS[1] marks, KEYS[2] mapping, KEYS[3] max id
//	ARGV    prefix, token, host, lo, hi, ttl ms, now ms, ahead ms, restart ms, slack ms
//	returns {id, after, mark, up} as leaseAcquire; {-1, last} when the range is used up;
//	{-2, id, pttl} when another owner holds the host's ID; {-3, id} when the
//	mapping holds an ID outside lo..hi; {-4} when it holds something that is
//	not a decimal ID; {-5} when max id does not; {-6, server ms} as leaseAcquire
//
// A decimal ID here is 1 to 15 ASCII digits, which a Lua number holds
// exactly. Anything else ("5.5", "-0", "nan", " 5") is refused: Lua's
// tonumber would accept it, name a lease key the canonical spelling never
// collides with, and hand Redis a number it truncates, so two hosts could
// share an ID.
var hostAcquire = redis.NewScript(luaTake + `
local function decimal(raw)
  return string.match(raw, '^%d+$') ~= nil and #raw <= 15
end

local prefix, token, marks, mapping, maxid = ARGV[1], ARGV[2], KEYS[1], KEYS[2], KEYS[3]
local host = ARGV[3]
local lo, hi = tonumber(ARGV[4]), tonumber(ARGV[5])
local ttl, now, ahead = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local restart, slack = tonumber(ARGV[9]), tonumber(ARGV[10])
local srv = clockAhead(now, slack)
if srv then
  return {-6, srv}
end
local up = restartUp(restart)
local id, after = mine(prefix, token)
if id then
  return take(prefix, token, marks, id, after, ttl, now, ahead, up)
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
return take(prefix, token, marks, id, markOf(marks, id, restartFloor(now, up, restart)), ttl, now, ahead, up)
`)

// renew extends the token's lease on id and raises the mark ahead.
//
//	KEYS[1] marks
//	ARGV    prefix, token, id, ttl ms, now ms, ahead ms, slack ms
//	returns {1, mark}; {0} when no lease is on id; {-1} when another owner
//	holds it; {-2, server ms} when now is more than slack ahead of the
//	server's time, and then the lease is left to run out
var renew = redis.NewScript(luaClock + `
local prefix, token, marks, id = ARGV[1], ARGV[2], KEYS[1], ARGV[3]
local ttl, now, ahead = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local slack = tonumber(ARGV[7])
local lease = prefix .. 'LEASE:' .. id
local holder = redis.call('GET', lease)
if holder ~= token then
  if holder then
    return {-1}
  end
  return {0}
end
local srv = clockAhead(now, slack)
if srv then
  return {-2, srv}
end
redis.call('PEXPIRE', lease, ttl)
redis.call('PEXPIRE', prefix .. 'OWNER:' .. token, ttl)
return {1, raise(marks, id, now + ahead)}
`)

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
        raise(KEYS[1], id, math.min(issued, serverMs() + ahead + slack))
      end
    end
  end
end
redis.call('DEL', owner)
return {n}
`)
