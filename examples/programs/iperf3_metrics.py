"""Reads iperf3's JSON report (-J) on stdin and appends what it measured,
per second and in total, to the testbed's metrics file ($TESTBED_METRICS)
as JSON lines: {"t": seconds since the test began, "mbit_per_s": ...}."""

import json
import os
import sys

report = json.load(sys.stdin)
with open(os.environ["TESTBED_METRICS"], "a") as out:
    for interval in report["intervals"]:
        s = interval["sum"]
        out.write(json.dumps({"second": s["end"], "mbit_per_s": s["bits_per_second"] / 1e6}) + "\n")
    total = report["end"]["sum_received"]
    out.write(json.dumps({"received_mbit_per_s": total["bits_per_second"] / 1e6,
                          "received_bytes": total["bytes"]}) + "\n")
print(f"{total['bits_per_second'] / 1e6:.2f} Mbit/s received")
