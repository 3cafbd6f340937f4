"""Sending packet trains without overflowing the first link's queue.

The probe runs on its DC's router, so a train goes straight into the
queue of the WAN link it leaves by.  Handed to the kernel at once, a
train longer than that queue loses its tail there: each WAN queue holds
one round trip of its rate, so a 10 ms link at 25 Mbit/s holds 41 frames,
while a train that lasts USEFUL_TRAIN at that rate is 124 frames long;
and with TCP keeping the queue nearly full, almost none of it got in.

So each destination has a socket of its own whose send buffer holds no
more than the first link's queue: a frame the queue still holds is
charged to the socket that sent it, and the kernel refuses a datagram
while the socket's charge is at its buffer.  A train that fits the queue
goes at once, as it always did; of a longer one, the probe hands over
what the socket takes and the rest as the queue drains (the socket is
writable again at half its buffer), so the link stays busy with the train
as long as the probe wakes within half a queue's time, and the receiver
still times the link, not the sender.

`QUEUE_SHARE` of the queue, not less: frames that wait in the queue
together leave back to back, while a train fed in smaller doses shares
the queue with the traffic already in it, whose frames then fall between
every dose, and it reads what that traffic leaves of the link (a plan
that keeps its links full read 0.6-0.7 of them with half the queue).
A queue sized in round trips shrinks with its link's rate when the rate
changes live; the share is taken of the queue the run started with, so a
link slowed down may again drop a long train's tail (the frames that do
arrive still carry the link's spacing).
"""

import socket

from agents.probe.schedule import FRAME

# What the kernel charges a socket for one full-frame datagram (its
# sk_buff's truesize, 2304 bytes on this kernel, measured with SIOCOUTQ):
# a send buffer is counted in these, not in bytes on the wire.
TRUESIZE = 2304
QUEUE_SHARE = 1.0
MIN_FRAMES = 2           # the smallest queue a spec may set, and about the kernel's least send buffer
UNLIMITED = 4 << 20      # bytes: a whole train at once, for a link of no known queue
SO_SNDBUFFORCE, SO_RCVBUFFORCE = 32, 33  # past net.core.[rw]mem_max; root only


def force_buffer(sock, forced, plain, size):
    """Set a socket buffer to `size` bytes, past the system's cap where we may."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, forced, size)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, plain, size)


def frames_in_flight(queue_bytes, share=QUEUE_SHARE):
    """How many of a train's frames may wait in a queue of `queue_bytes`."""
    return max(MIN_FRAMES, int(share * queue_bytes / FRAME))


class TrainSender:
    """Trains under way, per destination: [(train id, packets, next seq,
    sent time)], each destination with its socket."""

    def __init__(self, host, queues, head, pad):
        """`queues`: {destination address: bytes of the queue its trains
        enter first, or None for no limit}; `head(train, seq, count,
        sent)`: a frame's header."""
        self.head, self.pad = head, pad
        self.socks = {}
        for addr, queue in queues.items():
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            # The kernel doubles what it is given (for its own overhead).
            size = frames_in_flight(queue) * TRUESIZE // 2 if queue else UNLIMITED
            force_buffer(sock, SO_SNDBUFFORCE, socket.SO_SNDBUF, size)
            sock.bind((host, 0))
            sock.setblocking(False)
            self.socks[addr] = sock
        self.trains = {addr: [] for addr in queues}

    def start(self, addr, train, packets, sent):
        """Begin a train; returns what `pump` does."""
        self.trains[addr].append([train, packets, 0, sent])
        return self.pump()

    def pump(self):
        """Hand over every frame the sockets take now; returns the trains
        this wholly handed over, [(address, train id, packets, sent)]."""
        done = []
        for addr, queue in self.trains.items():
            while queue:
                train, packets, seq, sent = queue[0]
                try:
                    while seq < packets:
                        self.socks[addr].sendto(self.head(train, seq, packets, sent) + self.pad, addr)
                        seq += 1
                except BlockingIOError:
                    queue[0][2] = seq
                    break
                queue.pop(0)
                done.append((addr, train, packets, sent))
        return done

    def waiting(self):
        """The sockets of trains not yet wholly handed over."""
        return [self.socks[addr] for addr, queue in self.trains.items() if queue]

    def close(self):
        for sock in self.socks.values():
            sock.close()
