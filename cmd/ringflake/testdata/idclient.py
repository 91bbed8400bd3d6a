"""A Python caller of ringflake serve's gRPC API, as docs/service.md shows
one: Debian's python3-grpcio, with stubs that Debian's python3-grpc-tools
generates from ringflake.proto when this runs.

    /usr/bin/python3 idclient.py PROTO_DIR HOST:PORT N

It takes IDs from the server by NextID, NextIDs and Blocks, N in all, and
checks them: no ID twice, each larger than the one before (one server's
IDs increase), each of the server's machine ID and of the last few seconds
under the layout Info gives, and Decode's parts equal to its own. It ends
with status 0 and a JSON summary on stdout, or 1 and the failure on stderr.
"""

import json
import os
import sys
import tempfile
import time

import grpc
from grpc_tools import protoc


def stubs(proto_dir):
    """Generates ringflake_pb2 and ringflake_pb2_grpc, and imports them."""
    out = tempfile.mkdtemp(prefix="ringflake-py-")
    args = ["protoc", "-I" + proto_dir, "--python_out=" + out, "--grpc_python_out=" + out, "ringflake.proto"]
    if protoc.main(args) != 0:
        sys.exit("protoc failed on %s/ringflake.proto" % proto_dir)
    sys.path.insert(0, out)
    import ringflake_pb2
    import ringflake_pb2_grpc
    return ringflake_pb2, ringflake_pb2_grpc


def parts(layout, i):
    """The parts of ID i under layout, as ringflake.Layout.Decompose gives them."""
    seq_bits, machine_bits = layout.sequence_bits, layout.machine_bits
    ticks = i >> (machine_bits + seq_bits)
    return {
        "unix_nanos": layout.epoch_unix_nanos + ticks * layout.tick_nanos,
        "machine": (i >> seq_bits) & ((1 << machine_bits) - 1),
        "sequence": i & ((1 << seq_bits) - 1),
    }


def main():
    proto_dir, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    pb, pb_grpc = stubs(proto_dir)
    with grpc.insecure_channel(target) as channel:
        api = pb_grpc.IDsStub(channel)
        info = api.Info(pb.InfoRequest(), timeout=30, wait_for_ready=True)
        layout = info.layout
        began = time.time_ns()
        ids = [api.NextID(pb.NextIDRequest(), timeout=30).id]
        batch = min(n // 3, info.max_batch)
        ids += api.NextIDs(pb.NextIDsRequest(n=batch), timeout=30).ids
        size = min(100, info.max_batch)
        for block in api.Blocks(pb.BlocksRequest(size=size, count=max(1, -(-(n - len(ids)) // size))), timeout=30):
            ids += block.ids
        ended = time.time_ns()

        for prev, i in zip(ids, ids[1:]):
            if i <= prev:
                sys.exit("ID %d follows %d: one server's IDs must increase" % (i, prev))
        if len(set(ids)) != len(ids):
            sys.exit("%d IDs repeat" % (len(ids) - len(set(ids))))
        tick = layout.tick_nanos
        for i in ids:
            p = parts(layout, i)
            if p["machine"] != info.machine:
                sys.exit("ID %d has machine %d; the server holds %d" % (i, p["machine"], info.machine))
            if not began - tick - 5 * 10**9 <= p["unix_nanos"] <= ended:
                sys.exit("ID %d has time %d ns, outside the calls' %d..%d" % (i, p["unix_nanos"], began, ended))

        split = layout.datacenter_bits > 0
        for i in (ids[0], ids[-1]):
            d = api.Decode(pb.DecodeRequest(id=str(i), format="decimal"), timeout=30)
            p = parts(layout, i)
            got = {"unix_nanos": d.unix_nanos, "machine": d.machine, "sequence": d.sequence}
            if d.id != i or got != p:
                sys.exit("Decode(%d) = %s; want %s" % (i, got, p))
            if d.HasField("datacenter") != split or d.HasField("worker") != split:
                sys.exit("Decode(%d) sets datacenter and worker: %s; the layout splits the machine ID: %s"
                         % (i, d.HasField("datacenter"), split))
            worker_bits = layout.machine_bits - layout.datacenter_bits
            if split and (d.datacenter, d.worker) != (d.machine >> worker_bits, d.machine & ((1 << worker_bits) - 1)):
                sys.exit("Decode(%d): datacenter %d, worker %d of machine %d" % (i, d.datacenter, d.worker, d.machine))

        try:
            api.NextIDs(pb.NextIDsRequest(n=0), timeout=30)
            sys.exit("NextIDs(n=0) succeeded")
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.INVALID_ARGUMENT:
                sys.exit("NextIDs(n=0): %s; want INVALID_ARGUMENT" % e.code())

    json.dump({"count": len(ids), "unique": len(set(ids)), "machine": info.machine, "first": str(ids[0]),
               "last": str(ids[-1]), "datacenter": d.datacenter if split else None,
               "grpc": grpc.__version__, "python": sys.version.split()[0]}, sys.stdout)


if __name__ == "__main__":
    main()
