/*
 * testbed-delayline: the userspace delay line of testbed/emulation/relay.py,
 * compiled, for a fraction of the CPU per frame.  Same semantics, same
 * control protocol; relay.py is the reference.  One process serves every
 * WAN link of a run.
 *
 * A link joins two interfaces, a and b, of its middle namespace.  Every
 * frame read on one side is held for its direction's delay (plus jitter)
 * and written to the other side, or dropped with the direction's loss
 * probability.  Rate shaping is HTB's job at the routers, not ours.
 *
 * Links: each `--link a=IF,b=IF,control=PATH[,netns=PATH][,seed=N]
 * [,ab-delay=X,...]` is one link; its packet sockets are opened inside the
 * namespace at netns (a bind-mounted or /proc/PID/ns/net file), so the
 * process itself may live anywhere.  relay.py's options (--a, --b,
 * --control, --seed, --ab-delay, ...) describe one link in our own
 * namespace.  All links share one epoll loop and one release clock; each
 * keeps its own control socket and its own random generator.
 *
 * Jitter is relay.py's reflected random walk: the offset moves from one
 * frame to the next by a uniform step no larger than the gap between them,
 * reflected at +-jitter, so delays stay uniform in the band and frames never
 * overtake each other.  Loss and jitter draw from a link's xoshiro256**
 * generator seeded by its seed (the sequence differs from Python's, the
 * distribution does not).  A frame's arrival is the kernel's receive
 * timestamp (the packet ring's tp_sec/tp_nsec).
 *
 * Release clock: frames leave on a grid of TICK (--tick, 1 ms by default);
 * a frame goes out at the first tick no earlier than its deadline - EARLY
 * (EARLY = TICK / 2), so the error is uniform in [-TICK/2, +TICK/2),
 * centred on zero (relay.py instead sleeps to each deadline, to the
 * microsecond, and releases what is due within 0.2 ms).  Each tick is a
 * wake-up, and on a virtual machine a wake-up from idle costs the machine
 * more than a frame does (about 11 us here), so on a lone link of a few
 * thousand frames a second the clock is a large share of the cost; `wakeups` in the
 * stats counts them, and benchmarks/delay_line.py prices them with a
 * coarser --tick.  The ticks are woken by epoll_pwait2 (nanosecond
 * timeout) with a small timer slack.  A grid rather than a wake-up per
 * deadline lets one wake-up carry every frame due in it, for every link.
 *
 * Rings: each packet socket has a TPACKET_V2 receive ring and transmit
 * ring shared with the kernel.  Reading a frame is a look at the ring, no
 * system call; the frames due in a tick are written into the transmit ring
 * and go out with one send() per socket.  A frame that finds no free
 * transmit slot (or does not fit one) is sent on its own, in order.
 *
 * Reading: while frames stream in, a side is read once per tick instead of
 * on every arrival.  This changes no frame's release time as long as the
 * direction's shortest hold (delay - jitter) is at least EARLY, since such
 * a frame cannot be due before the tick after it arrived; a direction with
 * a shorter hold is read on every arrival.  A side is looked at on every
 * tick while any side brings frames, and watched by epoll again once all
 * are quiet.
 *
 * Frame sizes: the testbed turns GSO/GRO/TSO off on every interface, so
 * frames are at most MTU-sized; a frame longer than a ring slot holds
 * arrives cut short and is dropped and counted, not forwarded cut short.
 *
 * Control: per link a Unix stream socket, one JSON line in, one JSON line
 * out: {"op": "set", "dir": "ab", "delay": 0.04, "jitter": 0, "loss": 0.01}
 * and {"op": "stats"}, answered with the keys relay.py uses.  cpu_s is the
 * whole process's CPU time, shared by all its links ("links" says how many).
 * A request is relay.py's: a flat JSON object of strings and numbers, each
 * key once, read whole within REQUEST_DEADLINE (nothing forwards while one
 * is read, so a client that trickles bytes holds every link up that long
 * at most).
 *
 * SIGTERM and SIGINT end it cleanly and remove the control sockets.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <net/if.h>
#include <poll.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

static double TICK = 0.001;             /* --tick */
#define EARLY (TICK / 2)
#define MIN_TICK 0.0001
#define MAX_TICK 0.01
static uint64_t wakeups;                 /* returns from the wait, for the stats */
#define DATA_RING (256UL << 20)          /* bytes held per direction (virtual) */
#define SLOTS (1UL << 20)                /* frames held per direction */
#define RING_FRAME 2048                  /* a ring slot: header + an MTU-sized frame */
#define RING_BLOCK (64 << 10)
#define RX_BLOCKS 128                    /* 8 MiB, 4096 frames, as relay.py's receive buffer */
#define TX_BLOCKS 16                     /* 1 MiB, 512 frames in flight */
#define SNDBUF (4 << 20)
#define CTL_LINE 4096
#define REQUEST_DEADLINE 0.25            /* seconds a whole request may take to arrive */
#define MAX_LINKS 256

static void die(const char *fmt, ...);

/* ------------------------------------------------------------- random */

struct rng { uint64_t s[4]; };

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* Uniform in [0, 1): xoshiro256**, top 53 bits. */
static double rng_random(struct rng *g)
{
    uint64_t *s = g->s;
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0]; s[3] ^= s[1];
    s[1] ^= s[2]; s[0] ^= s[3];
    s[2] ^= t; s[3] = rotl(s[3], 45);
    return (r >> 11) * 0x1.0p-53;
}

static double rng_uniform(struct rng *g, double lo, double hi)
{
    return lo + (hi - lo) * rng_random(g);
}

/* -------------------------------------------------------------- rings */

/* One packet socket on one interface, with its two rings. */
struct port {
    int fd;
    const char *ifname;
    unsigned char *rx, *tx;              /* the rings, mapped */
    unsigned rx_cur, tx_cur;             /* next slot to look at */
    unsigned tx_pending;                 /* slots filled since the last send() */
};

#define RX_FRAMES (RX_BLOCKS * (RING_BLOCK / RING_FRAME))
#define TX_FRAMES (TX_BLOCKS * (RING_BLOCK / RING_FRAME))
/* Where a transmit slot's frame starts (the kernel's rule for V2 without
 * PACKET_TX_HAS_OFF). */
#define TX_DATA (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))

static struct tpacket2_hdr *rx_slot(struct port *p, unsigned i)
{
    return (struct tpacket2_hdr *)(p->rx + (size_t)i * RING_FRAME);
}

static struct tpacket2_hdr *tx_slot(struct port *p, unsigned i)
{
    return (struct tpacket2_hdr *)(p->tx + (size_t)i * RING_FRAME);
}

static unsigned status_of(struct tpacket2_hdr *h)
{
    return __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
}

static void set_status(struct tpacket2_hdr *h, unsigned status)
{
    __atomic_store_n(&h->tp_status, status, __ATOMIC_RELEASE);
}

static void open_port(struct port *p, const char *ifname)
{
    memset(p, 0, sizeof *p);
    p->ifname = ifname;
    /* Protocol 0 until bound: the socket sees no frame of another interface. */
    int s = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0)
        die("packet socket: %s", strerror(errno));
    unsigned idx = if_nametoindex(ifname);
    if (!idx)
        die("no interface %s", ifname);
    int one = 1, version = TPACKET_V2, sndbuf = SNDBUF;
    if (setsockopt(s, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0)
        die("TPACKET_V2 on %s: %s", ifname, strerror(errno));
    /* Frames sent count against the send buffer until the receiving side
     * takes them over; a small one would refuse sends under load. */
    if (setsockopt(s, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf) < 0)
        setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
    /* A malformed frame in the transmit ring is skipped, not a stop. */
    setsockopt(s, SOL_PACKET, PACKET_LOSS, &one, sizeof one);
    struct tpacket_req rx = {RING_BLOCK, RX_BLOCKS, RING_FRAME, RX_FRAMES};
    struct tpacket_req tx = {RING_BLOCK, TX_BLOCKS, RING_FRAME, TX_FRAMES};
    if (setsockopt(s, SOL_PACKET, PACKET_RX_RING, &rx, sizeof rx) < 0 ||
        setsockopt(s, SOL_PACKET, PACKET_TX_RING, &tx, sizeof tx) < 0)
        die("packet rings on %s: %s", ifname, strerror(errno));
    size_t rx_size = (size_t)RX_BLOCKS * RING_BLOCK, tx_size = (size_t)TX_BLOCKS * RING_BLOCK;
    unsigned char *map = mmap(NULL, rx_size + tx_size, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0);
    if (map == MAP_FAILED)
        die("mapping the packet rings of %s: %s", ifname, strerror(errno));
    p->rx = map;
    p->tx = map + rx_size;
    /* Our own transmissions would otherwise come back to us as captured frames. */
    if (setsockopt(s, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one) < 0)
        die("PACKET_IGNORE_OUTGOING on %s: %s", ifname, strerror(errno));
    struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
                              .sll_ifindex = (int)idx};
    if (bind(s, (struct sockaddr *)&sll, sizeof sll) < 0)
        die("bind to %s: %s", ifname, strerror(errno));
    p->fd = s;
}

/* ---------------------------------------------------------- direction */

struct slot { double deadline; uint64_t off; uint32_t len; };

enum { WATCH_SIDE, WATCH_CONTROL };
struct watch { int kind; void *obj; };

struct direction {
    const char *name;
    struct port *in, *out;               /* read from, write to */
    struct rng *rng;                     /* the link's */
    struct watch watch;
    double delay, jitter, loss;
    struct slot *slots;                  /* ring of SLOTS */
    uint64_t head, tail;                 /* slot counters: head is the oldest */
    unsigned char *data;                 /* ring of DATA_RING bytes */
    uint64_t rpos, wpos;                 /* byte counters into data */
    double last_deadline, offset, last_arrival;
    int have_offset, have_arrival;
    int armed;                           /* `in` is watched by epoll */
    double read_at;                      /* else: read it at this tick */
    int got;                             /* frames read in this round */
    uint64_t frames, bytes, dropped;
    uint64_t tx_bytes;                   /* in the transmit ring, not yet sent */
};

static void *reserve(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        die("mmap: %s", strerror(errno));
    return p;
}

static void direction_init(struct direction *d, const char *name, struct port *in,
                           struct port *out, struct rng *rng, double delay, double jitter,
                           double loss)
{
    memset(d, 0, sizeof *d);
    d->name = name; d->in = in; d->out = out; d->rng = rng;
    d->watch = (struct watch){WATCH_SIDE, d};
    d->delay = delay; d->jitter = jitter; d->loss = loss;
    d->slots = reserve(SLOTS * sizeof(struct slot));
    d->data = reserve(DATA_RING);
}

static uint64_t queued(const struct direction *d) { return d->tail - d->head; }

/* relay.py's Direction.jitter_offset. */
static double jitter_offset(struct direction *d, double now)
{
    double j = d->jitter;
    double gap = d->have_arrival ? fmax(0.0, now - d->last_arrival) : INFINITY;
    d->last_arrival = now;
    d->have_arrival = 1;
    if (!d->have_offset || gap >= 2 * j || fabs(d->offset) > j) {
        d->offset = rng_uniform(d->rng, -j, j);
        d->have_offset = 1;
    } else {
        double x = d->offset + rng_uniform(d->rng, -gap, gap);
        d->offset = x > j ? 2 * j - x : x < -j ? -2 * j - x : x;
    }
    return d->offset;
}

/* relay.py's Direction.admit, with a bounded store: a frame that finds the
 * store full is dropped and counted. */
static void admit(struct direction *d, const unsigned char *frame, uint32_t len, double now)
{
    if (d->loss > 0 && rng_random(d->rng) < d->loss) {
        d->dropped++;
        return;
    }
    double hold = d->delay;
    if (d->jitter > 0)
        hold = fmax(0.0, hold + jitter_offset(d, now));
    /* The floor only matters right after a live change of the delay. */
    double deadline = fmax(now + hold, d->last_deadline);
    d->last_deadline = deadline;

    uint64_t off = d->wpos;
    if (off % DATA_RING + len > DATA_RING)   /* frames never wrap: skip the tail */
        off += DATA_RING - off % DATA_RING;
    if (queued(d) == SLOTS || off + len - d->rpos > DATA_RING) {
        d->dropped++;
        return;
    }
    memcpy(d->data + off % DATA_RING, frame, len);
    d->wpos = off + len;
    struct slot *s = &d->slots[d->tail % SLOTS];
    s->deadline = deadline; s->off = off; s->len = len;
    d->tail++;
}

/* Hand the frames put in d->out's transmit ring to the kernel: one send()
 * for all of them.  If the kernel refuses, the frames it did not take are
 * dropped and counted, as relay.py counts a refused send. */
static void tx_push(struct direction *d)
{
    struct port *p = d->out;
    if (!p->tx_pending)
        return;
    ssize_t r;
    do
        r = send(p->fd, NULL, 0, MSG_DONTWAIT);
    while (r < 0 && errno == EINTR);
    uint64_t unsent = 0;
    for (unsigned k = 1; k <= p->tx_pending; k++) {
        struct tpacket2_hdr *h = tx_slot(p, (p->tx_cur + TX_FRAMES - k) % TX_FRAMES);
        unsigned st = status_of(h);
        if (st == TP_STATUS_SEND_REQUEST || st == TP_STATUS_WRONG_FORMAT) {
            unsent++;
            d->bytes -= h->tp_len;
            set_status(h, TP_STATUS_AVAILABLE);
        }
    }
    d->frames -= unsent;
    d->dropped += unsent;
    p->tx_pending = 0;
}

/* Put one frame in d->out's transmit ring; 0 if no slot is free or the
 * frame does not fit one. */
static int tx_put(struct direction *d, const unsigned char *frame, uint32_t len)
{
    struct port *p = d->out;
    struct tpacket2_hdr *h = tx_slot(p, p->tx_cur);
    if (len > RING_FRAME - TX_DATA || status_of(h) != TP_STATUS_AVAILABLE)
        return 0;
    memcpy((unsigned char *)h + TX_DATA, frame, len);
    h->tp_len = len;
    set_status(h, TP_STATUS_SEND_REQUEST);
    p->tx_cur = (p->tx_cur + 1) % TX_FRAMES;
    p->tx_pending++;
    return 1;
}

/* Send every frame due by now + EARLY; a frame the kernel refuses is
 * dropped and counted, as relay.py does. */
static void flush(struct direction *d, double now)
{
    while (d->head < d->tail) {
        struct slot *s = &d->slots[d->head % SLOTS];
        if (s->deadline > now + EARLY)
            break;
        unsigned char *frame = d->data + s->off % DATA_RING;
        if (!tx_put(d, frame, s->len)) {
            tx_push(d);                  /* what is ahead of it goes first */
            if (!tx_put(d, frame, s->len)) {
                if (send(d->out->fd, frame, s->len, MSG_DONTWAIT) < 0) {
                    d->dropped++;
                    goto next;
                }
            }
        }
        d->frames++;
        d->bytes += s->len;
    next:
        d->rpos = s->off + s->len;
        d->head++;
    }
    if (d->head == d->tail)
        d->rpos = d->wpos;
    tx_push(d);
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Admit every frame waiting in d->in's receive ring at its kernel arrival
 * time (on the monotonic clock).  Returns how many frames were read. */
static int drain(struct direction *d)
{
    struct port *p = d->in;
    int total = 0;
    double now = 0, wall = 0;
    for (;;) {
        struct tpacket2_hdr *h = rx_slot(p, p->rx_cur);
        if (!(status_of(h) & TP_STATUS_USER))
            return total;
        if (!total) {
            now = clock_s(CLOCK_MONOTONIC);
            wall = clock_s(CLOCK_REALTIME);
        }
        if (h->tp_snaplen < h->tp_len)
            d->dropped++;                /* longer than a slot: cut short */
        else
            admit(d, (unsigned char *)h + h->tp_mac, h->tp_snaplen,
                  now + (h->tp_sec + h->tp_nsec * 1e-9) - wall);
        set_status(h, TP_STATUS_KERNEL);
        p->rx_cur = (p->rx_cur + 1) % RX_FRAMES;
        total++;
    }
}

/* ------------------------------------------------------ a tiny JSON */

/* The control requests are one flat object of strings and numbers; that is
 * all this reads.  Values are kept as text and converted by the caller. */
#define MAX_KEYS 16
struct kv { char key[32]; char value[64]; int is_string; };
struct request { struct kv kv[MAX_KEYS]; int n; };

static const char *skip_ws(const char *p) { while (isspace((unsigned char)*p)) p++; return p; }

static const char *parse_string(const char *p, char *out, size_t size, char *err)
{
    size_t n = 0;
    p++;                                  /* the opening quote */
    while (*p && *p != '"') {
        char c = *p++;
        if (c == '\\') {
            c = *p++;
            switch (c) {
            case '"': case '\\': case '/': break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            default:
                snprintf(err, 128, "unsupported escape in a JSON string");
                return NULL;
            }
        }
        if (n + 1 >= size) {
            snprintf(err, 128, "JSON string too long");
            return NULL;
        }
        out[n++] = c;
    }
    if (*p != '"') {
        snprintf(err, 128, "unterminated JSON string");
        return NULL;
    }
    out[n] = 0;
    return p + 1;
}

/* Where the JSON number starting at p ends (-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?),
 * or NULL if none starts there. */
static const char *json_number_end(const char *p)
{
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (isdigit((unsigned char)*p))
            p++;
    else
        return NULL;
    if (*p == '.') {
        if (!isdigit((unsigned char)*++p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return NULL;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return p;
}

static int parse_request(const char *line, struct request *req, char *err)
{
    const char *p = skip_ws(line);
    req->n = 0;
    if (*p != '{') {
        snprintf(err, 128, "not a JSON object");
        return -1;
    }
    p = skip_ws(p + 1);
    if (*p == '}')
        goto end;
    for (;;) {
        if (req->n == MAX_KEYS) {
            snprintf(err, 128, "too many keys");
            return -1;
        }
        struct kv *kv = &req->kv[req->n];
        if (*p != '"') {
            snprintf(err, 128, "expected a key in double quotes");
            return -1;
        }
        if (!(p = parse_string(p, kv->key, sizeof kv->key, err)))
            return -1;
        p = skip_ws(p);
        if (*p != ':') {
            snprintf(err, 128, "expected ':' after a key");
            return -1;
        }
        p = skip_ws(p + 1);
        kv->is_string = *p == '"';
        if (kv->is_string) {
            if (!(p = parse_string(p, kv->value, sizeof kv->value, err)))
                return -1;
        } else {
            const char *end = json_number_end(p);
            if (!end || (size_t)(end - p) + 1 > sizeof kv->value) {
                snprintf(err, 128, "expected a string or a number as a value");
                return -1;
            }
            memcpy(kv->value, p, end - p);
            kv->value[end - p] = 0;
            p = end;
        }
        for (int i = 0; i < req->n; i++)
            if (strcmp(req->kv[i].key, kv->key) == 0) {
                snprintf(err, 128, "a key given twice");
                return -1;
            }
        req->n++;
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == '}')
            break;
        snprintf(err, 128, "expected ',' or '}'");
        return -1;
    }
end:
    p = skip_ws(p + 1);
    if (*p) {
        snprintf(err, 128, "extra data after the JSON object");
        return -1;
    }
    return 0;
}

static const struct kv *lookup(const struct request *req, const char *key)
{
    for (int i = 0; i < req->n; i++)
        if (strcmp(req->kv[i].key, key) == 0)
            return &req->kv[i];
    return NULL;
}

/* ---------------------------------------------------------------- links */

struct link {
    char spec[64];                       /* how errors name it: "link 2" */
    const char *a, *b, *control, *netns;
    long long seed;
    struct port pa, pb;
    struct rng rng;
    struct direction ab, ba;
    int ctl;
    struct watch watch;
};

static struct link links[MAX_LINKS];
static int nlinks;

/* ------------------------------------------------------------ control */

struct line { char buf[1024]; size_t n; };

static void put(struct line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(l->buf + l->n, sizeof l->buf - l->n, fmt, ap);
    va_end(ap);
    if (r > 0)
        l->n = l->n + r < sizeof l->buf ? l->n + r : sizeof l->buf - 1;
}

static void put_settings(struct line *l, const struct direction *d)
{
    put(l, "\"delay\": %.17g, \"jitter\": %.17g, \"loss\": %.17g", d->delay, d->jitter, d->loss);
}

static void put_error(struct line *l, const char *msg)
{
    put(l, "{\"ok\": false, \"error\": \"");
    for (const char *c = msg; *c; c++)
        put(l, *c == '"' || *c == '\\' ? "\\%c" : (unsigned char)*c < 0x20 ? "?" : "%c", *c);
    put(l, "\"}");
}

/* A "set": every value is checked before any is applied. */
static void answer_set(const struct request *req, struct link *k, struct line *l)
{
    const struct kv *dir = lookup(req, "dir");
    if (!dir || !dir->is_string) {
        put_error(l, "set needs \"dir\": \"ab\" or \"ba\"");
        return;
    }
    struct direction *d = strcmp(dir->value, "ab") == 0 ? &k->ab
                          : strcmp(dir->value, "ba") == 0 ? &k->ba : NULL;
    if (!d) {
        char msg[128];
        snprintf(msg, sizeof msg, "unknown dir '%s'; use ab or ba", dir->value);
        put_error(l, msg);
        return;
    }
    static const char *keys[3] = {"delay", "jitter", "loss"};
    double values[3] = {d->delay, d->jitter, d->loss};
    for (int i = 0; i < 3; i++) {
        const struct kv *kv = lookup(req, keys[i]);
        if (!kv)
            continue;
        char *end, msg[160];
        double v = strtod(kv->value, &end);
        if (kv->is_string || *end || end == kv->value || !isfinite(v)) {
            snprintf(msg, sizeof msg, "%s is not a number: %s", keys[i], kv->value);
            put_error(l, msg);
            return;
        }
        if (v < 0 || (i == 2 && v > 1)) {
            snprintf(msg, sizeof msg, "%s out of range: %g", keys[i], v);
            put_error(l, msg);
            return;
        }
        values[i] = v;
    }
    d->delay = values[0]; d->jitter = values[1]; d->loss = values[2];
    put(l, "{\"ok\": true, \"settings\": {");
    put_settings(l, d);
    put(l, "}}");
}

static void answer_stats(struct link *k, struct line *l)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6
               + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec * 1e-6;
    put(l, "{\"ok\": true, \"pid\": %d, \"cpu_s\": %.6f, \"wakeups\": %llu, \"tick\": %g, "
        "\"links\": %d, \"dirs\": {", (int)getpid(), cpu, (unsigned long long)wakeups, TICK, nlinks);
    const struct direction *dirs[2] = {&k->ab, &k->ba};
    for (int i = 0; i < 2; i++) {
        const struct direction *d = dirs[i];
        put(l, "%s\"%s\": {", i ? ", " : "", d->name);
        put_settings(l, d);
        put(l, ", \"frames\": %llu, \"bytes\": %llu, \"dropped\": %llu, \"queued\": %llu}",
            (unsigned long long)d->frames, (unsigned long long)d->bytes,
            (unsigned long long)d->dropped, (unsigned long long)queued(d));
    }
    put(l, "}}");
}

static void answer_line(const char *text, struct link *k, struct line *l)
{
    struct request req;
    char err[128];
    if (parse_request(text, &req, err) < 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "bad JSON: %s", err);
        put_error(l, msg);
        return;
    }
    const struct kv *op = lookup(&req, "op");
    if (op && op->is_string && strcmp(op->value, "set") == 0)
        answer_set(&req, k, l);
    else if (op && op->is_string && strcmp(op->value, "stats") == 0)
        answer_stats(k, l);
    else {
        char msg[128];
        snprintf(msg, sizeof msg, "unknown op '%s'", op ? op->value : "");
        put_error(l, msg);
    }
}

/* Serve one connection: one line in (whole within REQUEST_DEADLINE, as
 * relay.py reads it), one line out. */
static void answer(int conn, struct link *k)
{
    struct timeval tv = {0, (long)(REQUEST_DEADLINE * 1e6)};
    setsockopt(conn, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    char text[CTL_LINE];
    size_t n = 0;
    int late = 0;
    double until = clock_s(CLOCK_MONOTONIC) + REQUEST_DEADLINE;
    while (n + 1 < sizeof text && !memchr(text, '\n', n)) {
        double left = until - clock_s(CLOCK_MONOTONIC);
        struct pollfd pfd = {.fd = conn, .events = POLLIN};
        int ready = left > 0 ? poll(&pfd, 1, (int)ceil(left * 1000)) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0) {
            late = ready == 0;
            break;
        }
        ssize_t r = read(conn, text + n, sizeof text - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += r;
    }
    text[n] = 0;
    char *nl = memchr(text, '\n', n);
    if (nl)
        *nl = 0;
    struct line l = {.n = 0};
    if (late) {
        char msg[96];
        snprintf(msg, sizeof msg, "the request did not arrive whole within %gs", REQUEST_DEADLINE);
        put_error(&l, msg);
    } else if (n == 0 || (nl == text))
        put_error(&l, "no request");
    else if (!nl && n + 1 >= sizeof text)
        put_error(&l, "request too long");
    else if (strlen(text) != (size_t)(nl ? nl - text : (long)n))
        put_error(&l, "bad JSON: a NUL byte in the request");
    else
        answer_line(text, k, &l);
    put(&l, "\n");
    for (size_t sent = 0; sent < l.n;) {
        ssize_t r = send(conn, l.buf + sent, l.n - sent, MSG_NOSIGNAL);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        sent += r;
    }
    close(conn);
}

/* --------------------------------------------------------------- setup */

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("testbed-delayline: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

#define USAGE "usage: testbed-delayline --link a=IF,b=IF,control=PATH[,netns=PATH][,seed=N]" \
              "[,{ab,ba}-{delay,jitter,loss}=X] [--link ...] [--tick S] [--tag TAG]\n" \
              "   or: testbed-delayline --a IF --b IF --control PATH [--seed N] [--tag TAG]" \
              " [--tick S] [--{ab,ba}-{delay,jitter,loss} X]\n"

static void usage_error(const char *fmt, ...)
{
    va_list ap;
    fputs("testbed-delayline: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputs("\n" USAGE, stderr);
    exit(2);
}

static double number_arg(const char *name, const char *text)
{
    char *end;
    double v = strtod(text, &end);
    if (*end || end == text || !isfinite(v) || v < 0)
        usage_error("%s needs a number >= 0, not '%s'", name, text);
    return v;
}

/* One setting of a link: `name` as in relay.py's options without the
 * leading dashes (a, b, control, netns, seed, ab-delay, ...).  Returns 0
 * for a name it does not know. */
static int set_option(struct link *k, const char *name, const char *value)
{
    if (!strcmp(name, "a")) k->a = value;
    else if (!strcmp(name, "b")) k->b = value;
    else if (!strcmp(name, "control")) k->control = value;
    else if (!strcmp(name, "netns")) k->netns = value;
    else if (!strcmp(name, "seed")) {
        char *end;
        k->seed = strtoll(value, &end, 10);
        if (*end || end == value)
            usage_error("%sseed needs an integer, not '%s'", k->spec, value);
    } else {
        int dir = !strncmp(name, "ab-", 3) ? 0 : !strncmp(name, "ba-", 3) ? 1 : -1;
        const char *knob = name + 3;
        if (dir < 0 || (strcmp(knob, "delay") && strcmp(knob, "jitter") && strcmp(knob, "loss")))
            return 0;
        char label[128];
        snprintf(label, sizeof label, "%s%s", k->spec, name);
        double v = number_arg(label, value);
        struct direction *d = dir ? &k->ba : &k->ab;
        if (!strcmp(knob, "delay")) d->delay = v;
        else if (!strcmp(knob, "jitter")) d->jitter = v;
        else if (v > 1) usage_error("%s is a fraction in [0, 1], not %s", label, value);
        else d->loss = v;
    }
    return 1;
}

/* `a=IF,b=IF,...`, cut up in a copy kept for good: argv stays as it was,
 * since `testbed clean` knows us by our command line. */
static void parse_link(struct link *k, const char *text)
{
    char *copy = strdup(text);
    for (char *item = strtok(copy, ","); item; item = strtok(NULL, ",")) {
        char *eq = strchr(item, '=');
        if (!eq)
            usage_error("%s'%s' is not name=value", k->spec, item);
        *eq = 0;
        if (!set_option(k, item, eq + 1))
            usage_error("%sunknown setting %s", k->spec, item);
    }
}

static struct link *new_link(const char *spec)
{
    if (nlinks == MAX_LINKS)
        usage_error("more than %d links", MAX_LINKS);
    struct link *k = &links[nlinks++];
    snprintf(k->spec, sizeof k->spec, "%s", spec);
    return k;
}

/* relay.py's options (one link, as `--name value` or `--name=value`), or
 * any number of --link. */
static void parse_args(int argc, char **argv)
{
    struct link *single = NULL;
    for (int i = 1; i < argc; i++) {
        char name[64];
        char *value, *eq = strchr(argv[i], '=');
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(USAGE, stdout);
            exit(0);
        }
        if (strncmp(argv[i], "--", 2) != 0)
            usage_error("unexpected argument '%s'", argv[i]);
        if (eq) {
            snprintf(name, sizeof name, "%.*s", (int)(eq - argv[i]), argv[i]);
            value = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", argv[i]);
            if (i + 1 >= argc)
                usage_error("%s needs a value", name);
            value = argv[++i];
        }
        if (!strcmp(name, "--tag"))
            continue;                    /* for `testbed clean` to read, not for us */
        if (!strcmp(name, "--tick")) {
            TICK = number_arg(name, value);
            if (!(TICK >= MIN_TICK && TICK <= MAX_TICK))
                usage_error("--tick must be between %g and %g seconds, not %s", MIN_TICK, MAX_TICK,
                            value);
            continue;
        }
        if (!strcmp(name, "--link")) {
            char spec[64];
            snprintf(spec, sizeof spec, "--link %d: ", nlinks + 1);
            parse_link(new_link(spec), value);
            continue;
        }
        if (!single)
            single = new_link("--");
        if (!set_option(single, name + 2, value) || !strcmp(name, "--netns"))
            usage_error("unknown option %s", name);
    }
    if (nlinks == 0)
        usage_error("--a, --b and --control are required");
    if (single && nlinks > 1)
        usage_error("--link and the options of a single link (--a, --b, ...) do not mix");
    for (int i = 0; i < nlinks; i++) {
        struct link *k = &links[i];
        if (!k->a || !k->b || !k->control)
            usage_error(single ? "--a, --b and --control are required"
                               : "%sa=, b= and control= are required", k->spec);
        struct sockaddr_un addr;
        if (strlen(k->control) >= sizeof addr.sun_path)
            usage_error("%scontrol path too long: %s", k->spec, k->control);
    }
}

/* Open a link's two packet sockets in its namespace, then come back. */
static void open_ports(struct link *k, int home)
{
    if (k->netns) {
        int ns = open(k->netns, O_RDONLY | O_CLOEXEC);
        if (ns < 0 || setns(ns, CLONE_NEWNET) < 0)
            die("entering the network namespace %s: %s", k->netns, strerror(errno));
        close(ns);
    }
    open_port(&k->pa, k->a);
    open_port(&k->pb, k->b);
    if (k->netns && setns(home, CLONE_NEWNET) < 0)
        die("returning to our network namespace: %s", strerror(errno));
}

static void open_control(struct link *k)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, k->control);
    unlink(k->control);
    k->ctl = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (k->ctl < 0 || bind(k->ctl, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("control socket %s: %s", k->control, strerror(errno));
    chmod(k->control, 0600);
    if (listen(k->ctl, 8) < 0)
        die("listen on %s: %s", k->control, strerror(errno));
    k->watch = (struct watch){WATCH_CONTROL, k};
}

static void remove_controls(void)
{
    for (int i = 0; i < nlinks; i++)
        if (links[i].ctl > 0)
            unlink(links[i].control);
}

/* ---------------------------------------------------------------- loop */

static volatile sig_atomic_t stopping;
static void on_signal(int sig) { (void)sig; stopping = 1; }

static int wait_events(int ep, struct epoll_event *ev, int n, double timeout, const sigset_t *mask)
{
    static int no_pwait2;
    if (!no_pwait2) {
        struct timespec ts = {(time_t)timeout, (long)((timeout - (time_t)timeout) * 1e9)};
        int r = syscall(SYS_epoll_pwait2, ep, ev, n, &ts, mask, _NSIG / 8);
        if (r >= 0 || errno != ENOSYS)
            return r;
        no_pwait2 = 1;
    }
    return epoll_pwait(ep, ev, n, (int)ceil(timeout * 1000), mask);
}

/* The first tick of the grid after t. */
static double next_tick(double t) { return (floor(t / TICK) + 1) * TICK; }

/* Watch d->in with epoll until it fires once (then it is read per tick). */
static void arm(int ep, struct direction *d)
{
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.ptr = &d->watch};
    epoll_ctl(ep, EPOLL_CTL_MOD, d->in->fd, &ev);
    d->armed = 1;
}

/* A direction whose every frame is held at least EARLY can be read on the
 * tick after its frames arrive without delaying any of them. */
static int read_on_ticks(const struct direction *d) { return d->delay - d->jitter >= EARLY; }

int main(int argc, char **argv)
{
    /* Settings are parsed into the directions before their stores exist. */
    parse_args(argc, argv);

    int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (home < 0)
        die("our network namespace: %s", strerror(errno));
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (int i = 0; i < nlinks; i++) {
        struct link *k = &links[i];
        struct direction ab = k->ab, ba = k->ba;
        open_ports(k, home);
        rng_seed(&k->rng, (uint64_t)k->seed);
        direction_init(&k->ab, "ab", &k->pa, &k->pb, &k->rng, ab.delay, ab.jitter, ab.loss);
        direction_init(&k->ba, "ba", &k->pb, &k->pa, &k->rng, ba.delay, ba.jitter, ba.loss);
    }
    for (int i = 0; i < nlinks; i++) {
        struct link *k = &links[i];
        open_control(k);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &k->watch};
        epoll_ctl(ep, EPOLL_CTL_ADD, k->ctl, &ev);
        struct direction *dirs[2] = {&k->ab, &k->ba};
        for (int j = 0; j < 2; j++) {
            ev = (struct epoll_event){.events = EPOLLIN | EPOLLONESHOT, .data.ptr = &dirs[j]->watch};
            epoll_ctl(ep, EPOLL_CTL_ADD, dirs[j]->in->fd, &ev);
            dirs[j]->armed = 1;
        }
    }

    /* The signals are blocked except while waiting, so none is missed. */
    sigset_t block, wait_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigprocmask(SIG_BLOCK, &block, &wait_mask);
    sigdelset(&wait_mask, SIGTERM);
    sigdelset(&wait_mask, SIGINT);
    struct sigaction act = {.sa_handler = on_signal};
    sigaction(SIGTERM, &act, NULL);
    sigaction(SIGINT, &act, NULL);
    /* Tick wake-ups a few microseconds late, not the default 50. */
    prctl(PR_SET_TIMERSLACK, 5000UL);

    printf("{\"ready\": true, \"pid\": %d}\n", (int)getpid());
    fflush(stdout);

    int ndirs = 2 * nlinks;
    while (!stopping) {
        double now = clock_s(CLOCK_MONOTONIC);
        /* Sides read per tick: read them.  While any side brings frames we
         * wake every tick anyway, so a quiet side is looked at then too (a
         * look at its ring costs nothing); when all are quiet, they go back
         * to epoll. */
        int busy = 0;
        for (int i = 0; i < ndirs; i++) {
            struct direction *d = i % 2 ? &links[i / 2].ba : &links[i / 2].ab;
            d->got = 0;
            if (!d->armed && now >= d->read_at)
                d->got = drain(d);
            busy |= d->got > 0 && read_on_ticks(d);
        }
        for (int i = 0; i < ndirs; i++) {
            struct direction *d = i % 2 ? &links[i / 2].ba : &links[i / 2].ab;
            if (d->armed || now < d->read_at)
                continue;
            if (read_on_ticks(d) && busy)
                d->read_at = next_tick(now);
            else
                arm(ep, d);
        }
        now = clock_s(CLOCK_MONOTONIC);
        double wake = INFINITY;
        for (int i = 0; i < ndirs; i++) {
            struct direction *d = i % 2 ? &links[i / 2].ba : &links[i / 2].ab;
            flush(d, now);
            if (queued(d))
                wake = fmin(wake, ceil((d->slots[d->head % SLOTS].deadline - EARLY) / TICK) * TICK);
            if (!d->armed)
                wake = fmin(wake, d->read_at);
        }
        double timeout = wake < INFINITY ? fmax(0.0, wake - clock_s(CLOCK_MONOTONIC)) : 1.0;
        struct epoll_event events[64];
        int n = wait_events(ep, events, 64, timeout, &wait_mask);
        wakeups++;
        for (int i = 0; i < n; i++) {
            struct watch *w = events[i].data.ptr;
            if (w->kind == WATCH_SIDE) {
                struct direction *d = w->obj;
                d->armed = 0;
                drain(d);
                d->read_at = next_tick(clock_s(CLOCK_MONOTONIC));
                if (!read_on_ticks(d))
                    arm(ep, d);
            } else {
                struct link *k = w->obj;
                int conn = accept4(k->ctl, NULL, NULL, SOCK_CLOEXEC);
                if (conn >= 0)
                    answer(conn, k);
            }
        }
    }
    remove_controls();
    return 0;
}
