#!/bin/bash
# One VM's part of `make vm-cluster` (vm/cluster.py), run by the guest's
# init in /testbed:
#
#   cluster-node.sh MAC ADDRESS HEAD [SELFTEST ARGS...]
#
# Puts ADDRESS on the NIC with MAC (the private bridge, MTU 1550 so VXLAN
# carries 1500-byte frames) and joins the Ray cluster whose head is HEAD,
# offering the `testbed` resource; the VM whose ADDRESS is HEAD starts the
# head and runs the selftest with SELFTEST ARGS, exiting with its code.
# The host steers the VMs with files in each one's exchange directory
# (/run/geo): the head writes ray-up, the host then writes head-up to the
# others; they write joined, the host then writes go to the head; when the
# head is done (or anything failed), the host writes stop to every VM.
set -u
mac=$1 address=$2 head=$3
shift 3
exchange=/run/geo

wait_for() {                             # or leave, if the host says stop first
  until [ -e "$exchange/$1" ]; do
    [ -e "$exchange/stop" ] && exit 1
    sleep 1
  done
}

# Ray gives a new node's raylet 30 s to register with the head, which a
# guest under TCG on a busy host can miss: then it starts again.
ray_start() {
  for attempt in 1 2 3; do
    ray start "$@" --node-ip-address "$address" --resources '{"testbed": 1}' \
      --num-cpus "$(nproc)" --disable-usage-stats >/tmp/ray-start.log 2>&1 && return
    echo "ray start failed (attempt $attempt): $(tail -n 1 /tmp/ray-start.log)"
    ray stop --force >/dev/null 2>&1
  done
  cat /tmp/ray-start.log
  exit 1
}

modprobe virtio_net                      # no udev under the guest's init to load it
dev=
for d in /sys/class/net/*; do
  [ "$(cat "$d/address")" = "$mac" ] && dev=${d##*/}
done
if [ -z "$dev" ]; then
  echo "no NIC with MAC $mac"
  exit 1
fi
ip link set "$dev" mtu 1550 up
ip addr add "$address/24" dev "$dev"

if [ "$address" = "$head" ]; then
  ray_start --head --port 6379 --include-dashboard=false
  touch "$exchange/ray-up"
  wait_for go
  testbed selftest --cluster "$head:6379" --delay-backend netem "$@"
  code=$?
  ray stop >/dev/null 2>&1
  exit $code
fi
wait_for head-up
ray_start --address "$head:6379"
touch "$exchange/joined"
until [ -e "$exchange/stop" ]; do sleep 1; done
ray stop >/dev/null 2>&1
