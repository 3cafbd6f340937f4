"""Probe: one per data center, on its router.  Measures every other DC.

* Active: in each pair's slot of the period (slots every probe of the run
  agrees on, see agents.probe.schedule) it sends a packet train (UDP, full
  frames, back to back, never more at once than its first link's queue
  takes: agents.probe.sender) to the other DC's probe; the receiver turns the
  train's dispersion (kernel receive timestamps) into the bottleneck's wire
  rate.  A train that lost too many frames to be timed met a full queue:
  the receiver then reads what the link carried from its router's
  counters (agents.probe.carried).  Small echo packets measure the RTT.
* Passive: it reads the `xfer` events the transport of the agents in its
  DC writes (the goodput of real model transfers from other DCs).
* It publishes its estimates (every direction into its DC) on a PUB socket,
  subscribes to the others' to size its own trains, and writes each
  estimate as an event.
"""

import select
import socket
import statistics
import struct
import time

import zmq

from agents.probe import matrix, schedule
from agents.probe.carried import CarriedRates
from agents.probe.estimator import Estimator
from agents.probe.passive import PassiveReader
from agents.probe.sender import SO_RCVBUFFORCE, TrainSender, force_buffer

MAGIC = b"TBPR"
HEAD = struct.Struct("!4sBIHHd")        # magic, kind, train id, seq, count, sent (monotonic)
TRAIN, PING, PONG = 0, 1, 2
PAYLOAD = 1472                          # a 1514-byte frame on the wire
SO_TIMESTAMPNS = 35
# Trains from every other DC arrive here at once.
RECEIVE_BUFFER = 4 << 20
TRAIN_IDLE = 0.3                        # a train is over this long after its last packet
# A train longer than the bottleneck's queue loses its tail there, but the
# packets that get through still leave at the bottleneck's rate, so their
# spacing counts as long as enough of them arrive.
MIN_RECEIVED = 8
WINDOW = schedule.WINDOW
# A shaper lets a train's first frames through at once (HTB's bucket holds
# two frames at low rates, a millisecond of the rate at high ones, and the
# delay line releases frames on a 1 ms clock), so the frames that arrive
# within HEAD_CLUMP seconds of the first are the train's head: its rates
# count from the last of them.  Counted from the first, a 16-frame train
# reads 15/13 of a 2 Mbit/s link, whose bucket passes three frames at once.
HEAD_CLUMP = 0.001
# The delay line can release the bucket's second frame a tick after the
# first, just outside HEAD_CLUMP: the head also runs on while frames keep
# arriving at under HEAD_SHARE of the train's mean spacing.  Missed, that
# frame made a 16-frame train on a 1 Mbit/s link read 15/14 of it (seen on
# the 9-DC WAN at a quarter rate: its 1 Mbit/s links read 1.00 or 1.065,
# never between).  HEAD_SHARE is our choice.
HEAD_SHARE = 0.5


class Trains:
    """Arrival times of incoming trains, turned into rates when complete."""

    def __init__(self):
        self.open = {}       # (src, train) -> [count, [arrival times]]

    def add(self, src, train, seq, count, arrival):
        entry = self.open.setdefault((src, train), [count, []])
        entry[1].append(arrival)

    def finished(self, now_real):
        """Trains now over: ([(src, capacity, available, coarse, span,
        received, sent)] of those that can be timed, span being the seconds
        from first to last arrival; [(src, received, sent)] of those that
        lost too many frames to be)."""
        done, lost = [], []
        for key, (count, times) in list(self.open.items()):
            if len(times) >= count or now_real - times[-1] > TRAIN_IDLE:
                del self.open[key]
                if len(times) >= MIN_RECEIVED and times[-1] > times[0]:
                    times = sorted(times)
                    done.append((key[0], *dispersion_rates(times), times[-1] - times[0], len(times), count))
                elif len(times) < MIN_RECEIVED:
                    lost.append((key[0], len(times), count))
        return done, lost


def head_end(times, head=HEAD_CLUMP, share=HEAD_SHARE):
    """Index of the last frame of a train's head: the frames within `head`
    seconds of the first, and after them those that arrived less than
    `share` of the train's mean spacing after the one before."""
    last = max(i for i, t in enumerate(times) if t - times[0] <= head)
    pace = (times[-1] - times[0]) / (len(times) - 1)
    while last + 1 < len(times) and times[last + 1] - times[last] < share * pace:
        last += 1
    return last


def dispersion_rates(times, window=WINDOW, head=HEAD_CLUMP):
    """(capacity, available, coarse) in bit/s from a train's arrival times.

    Both are counted from the last frame of the train's head (`head_end`),
    unless the train is all head.
    available: the whole train's rate, which cross traffic sharing the
    bottleneck queue slows down.  capacity: the median rate of stretches of
    at least `window` seconds (the delay line releases frames on a 1 ms
    clock, so shorter stretches are too coarse); stretches that cross
    traffic interleaved with are slower and fall below the median.  A train
    shorter than two windows is `coarse`: good enough to size the next one."""
    bits = schedule.FRAME * 8
    last_of_head = head_end(times, head)
    if last_of_head < len(times) - 2:
        times = times[last_of_head:]
    available = (len(times) - 1) * bits / (times[-1] - times[0])
    rates, i = [], 0
    for j in range(1, len(times)):
        if times[j] - times[i] >= window:
            rates.append((j - i) * bits / (times[j] - times[i]))
            i = j
    if len(rates) < 2:
        return available, available, True
    rates.sort()
    return max(available, statistics.median(rates)), available, False


def kernel_time(anc):
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec + nsec * 1e-9
    return time.time()


def run(cfg, log):
    p = cfg.probe
    me = cfg.dc
    peers = {x.dc: x for x in cfg.probes if x.dc != me}
    pairs = [schedule.Pair(q["src"], q["dst"], tuple(tuple(link) for link in q["links"]),
                           q["delay"], q["rate"], q.get("queue"))
             for q in p.pairs]
    table = schedule.table(pairs, p.period, p.train_time)
    period = table.period
    mine = [q for q in pairs if q.src == me]
    incoming = {q.src: q for q in pairs if q.dst == me}
    estimators = {src: Estimator(period) for src in peers}

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    force_buffer(sock, SO_RCVBUFFORCE, socket.SO_RCVBUF, RECEIVE_BUFFER)
    sock.bind((cfg.host, cfg.port))
    pad = b"\0" * (PAYLOAD - HEAD.size)
    # Each train's own socket, so that one destination's link paces only its own trains.
    sender = TrainSender(cfg.host, {(peers[q.dst].host, cfg.port): q.queue for q in mine},
                         lambda train, seq, count, sent: HEAD.pack(MAGIC, TRAIN, train, seq, count, sent),
                         pad)
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.setsockopt(zmq.LINGER, 0)
    pub.bind(f"tcp://{cfg.host}:{p.pub_port}")
    sub = matrix.MatrixSubscriber([(x.host, p.pub_port) for x in peers.values()], ctx)
    passive = PassiveReader(p.passive_events, p.agent_dcs)
    trains = Trains()
    # The links whose counters read a pair: those a pair's route is alone.
    carried = CarriedRates({src: intf for src, intf in p.link_intfs.items()
                            if src in incoming and incoming[src].links == ((src, me),)})
    log("start", role="probe", dc=me, pairs=len(pairs), period=period,
        configured_period=p.period, slots=table.slots, budget=p.budget,
        steady_budget=p.steady_budget)

    sent_bytes = {dst: 0 for dst in peers}
    train_id = 0
    started = time.monotonic()
    # Every probe counts periods from the run's one epoch (CLOCK_MONOTONIC is
    # the same in every network namespace); one started late joins at the
    # next period.
    next_round = schedule.next_round(p.epoch, period, started)
    rounds = round((next_round - p.epoch) / period)
    due = []                             # [(time, pair)] trains of this round
    next_passive = started

    dc_of = {(x.host, cfg.port): dc for dc, x in peers.items()}

    def handed(trains):
        for addr, _, packets, sent in trains:
            log("train", dst=dc_of[addr], packets=packets, bytes=packets * schedule.FRAME, sent=sent,
                handed=time.monotonic() - sent)

    def plan(q, est):
        """(packets, every) of pair q's trains, from the estimate of q its receiver published."""
        return schedule.train_plan(q, pairs, est and est["bw"], period,
                                   schedule.budget_for(est, p.budget, p.steady_budget), p.train_time)

    def publish(src, now):
        est = estimators[src].estimate(now)
        if est is None:
            return
        matrix.publish(pub, me, now, {src: est})      # unsettled ones still size trains
        if est["settled"]:
            log("estimate", src=src, dst=me, **est)

    try:
        while True:
            now = time.monotonic()
            if now >= next_round:
                due = sorted(((next_round + table.offsets[(q.src, q.dst)], q) for q in mine
                              if schedule.fires(table.slot_of[(q.src, q.dst)],
                                                plan(q, sub.estimate(q.src, q.dst))[1], rounds)),
                             key=lambda d: d[0])
                for dst in peers:
                    sock.sendto(HEAD.pack(MAGIC, PING, 0, 0, 0, now), (peers[dst].host, cfg.port))
                # An estimate ages against how often its direction is probed,
                # which the sender plans from the estimate published here.
                for src, q in incoming.items():
                    est = estimators[src].estimate(now)
                    estimators[src].period = period * plan(q, est)[1]
                rounds += 1
                next_round += period
            while due and due[0][0] <= now:
                at, q = due.pop(0)
                if now - at > schedule.MARGIN:
                    # Its slot is under way (a busy CPU woke us late): sent
                    # now, it could cross the next slot's trains.
                    log("late", dst=q.dst, seconds=now - at)
                    continue
                packets, _ = plan(q, sub.estimate(q.src, q.dst))
                train_id += 1
                sent_bytes[q.dst] += packets * schedule.FRAME
                handed(sender.start((peers[q.dst].host, cfg.port), train_id, packets, time.monotonic()))
            if now >= next_passive:
                for src, t, goodput in passive.read():
                    if src in estimators:
                        estimators[src].add_passive(t, goodput)
                        publish(src, now)
                carried.sample()
                next_passive = now + 0.5
            sub.poll(0)
            timed, lost = trains.finished(time.time())
            for src, capacity, available, coarse, span, got, count in timed:
                estimators[src].add_active(time.monotonic(), capacity, available, coarse, span)
                publish(src, time.monotonic())
            for src, got, count in lost:
                # Its frames met a full queue: what the link carried is its capacity.
                rate = carried.rate(src)
                log("lost", src=src, received=got, sent=count, carried=rate)
                if rate:
                    estimators[src].add_carried(time.monotonic(), rate)
                    publish(src, time.monotonic())
            wake = min([next_round, next_passive] + [d[0] for d in due[:1]])
            ready, writable, _ = select.select([sock], sender.waiting(), [],
                                               max(0.0, min(0.05, wake - time.monotonic())))
            if writable:
                handed(sender.pump())
            if ready:
                receive(sock, trains, estimators, peers, cfg.port)
    finally:
        log("probe_bytes", sent=sent_bytes, seconds=time.monotonic() - started)
        sender.close()
        sub.close()
        pub.close(0)
        ctx.term()
        sock.close()


def receive(sock, trains, estimators, peers, port):
    by_host = {x.host: dc for dc, x in peers.items()}
    while True:
        try:
            data, anc, _, addr = sock.recvmsg(2048, 64, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        if len(data) < HEAD.size or data[:4] != MAGIC:
            continue
        _, kind, train, seq, count, sent = HEAD.unpack_from(data)
        src = by_host.get(addr[0])
        if src is None:
            continue
        if kind == TRAIN:
            trains.add(src, train, seq, count, kernel_time(anc))
        elif kind == PING:
            sock.sendto(HEAD.pack(MAGIC, PONG, 0, 0, 0, sent), (addr[0], port))
        elif kind == PONG:
            estimators[src].add_rtt(time.monotonic(), time.monotonic() - sent)
