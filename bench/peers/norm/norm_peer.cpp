/*
 * norm-peer: the NORM peer of `ltx-bench emu`. One transfer of a generated
 * payload from a sender to one receiver over a unicast NORM session, set up
 * as seed 000 ran NORM (normFileSend / normFileRecv): the sender transmits
 * at a fixed rate, the link's, with congestion control off; `--cc` turns
 * NORM-CC on instead.
 *
 *   norm-peer recv --listen IP:PORT --size N --seed S [--cc]
 *   norm-peer send --connect IP:PORT --size N --seed S --rate BPS [--cc]
 *                  [--tx-loss PERCENT]
 *   norm-peer pattern --seed S
 *
 * The payload is one NORM data object of N bytes (a file's worth, held in
 * memory rather than on disk so that disk speed is not measured).
 * `--tx-loss` has NORM drop that share of the sender's packets itself, so
 * that a test on loopback exercises repair. `pattern` prints the ends of the
 * payload's block, so that the benchmark can check that this program makes
 * the same bytes as its Rust peers. The
 * receiver (the server) checks it against the payload once NORM hands it
 * over whole, prints one JSON line, and stays a few seconds to acknowledge
 * the sender's watermark; the sender (the client) ends once the receiver
 * has acknowledged the whole object, and prints its own line.
 *
 * Written in the C subset of C++ and built with a C++ compiler: Debian's
 * normApi.h (1.5.9) declares two functions with C++ references and default
 * arguments, so a C compiler cannot read it.
 */

#include <normApi.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* The receiver's and the sender's NORM node ids: fixed, so that the sender
 * can name the receiver as the node that must acknowledge. */
static const NormNodeId RECEIVER_ID = 2;
static const NormNodeId SENDER_ID = 1;

/* Segment size and FEC block as in the NORM examples that seed 000 ran:
 * 1400-byte segments, blocks of 64 source segments with up to 16 parity
 * segments for repair, none sent proactively (NORM's default). */
static const UINT16 SEGMENT_SIZE = 1400;
static const UINT16 BLOCK_SOURCE = 64;
static const UINT16 BLOCK_PARITY = 16;

/* Buffer space of each end and its UDP socket buffers: large enough for a
 * 50 Mbit/s x 600 ms path and its repairs. */
static const UINT32 SESSION_BUFFER = 64u << 20;
static const unsigned int SOCKET_BUFFER = 8u << 20;

/* How long the receiver stays after the payload is whole, answering the
 * sender's acknowledgement requests; its figures are taken before. */
static const double LINGER_S = 3.0;

/* Watermark rounds the sender tries before it gives up on an
 * acknowledgement. */
static const int ACK_ROUNDS = 20;

/* Length of the payload's repeated block: see make_pattern. */
#define PATTERN_LEN ((1u << 20) - 3)

static void fail(const char* what) {
    fprintf(stderr, "error: %s\n", what);
    exit(1);
}

/* The payload every peer of `ltx-bench emu` sends, in every language: one
 * block of PATTERN_LEN bytes drawn from SplitMix64, repeated and cut to the
 * size. Output k of the generator gives bytes 8k..8k+7 of the block, least
 * significant first. */
static unsigned char* make_pattern(uint64_t seed) {
    unsigned char* block = (unsigned char*)malloc(PATTERN_LEN);
    if (!block) fail("out of memory");
    uint64_t state = seed;
    for (size_t i = 0; i < PATTERN_LEN; i += 8) {
        state += 0x9e3779b97f4a7c15ull;
        uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        for (size_t j = 0; j < 8 && i + j < PATTERN_LEN; j++) {
            block[i + j] = (unsigned char)(z >> (8 * j));
        }
    }
    return block;
}

/* The stream offset of the first byte of data[0..len) that differs from the
 * payload, or -1 when none does. */
static int64_t first_mismatch(const unsigned char* pattern, const char* data, uint64_t len) {
    uint64_t at = 0;
    while (at < len) {
        uint64_t in_block = at % PATTERN_LEN;
        uint64_t n = PATTERN_LEN - in_block;
        if (n > len - at) n = len - at;
        if (memcmp(data + at, pattern + in_block, n) != 0) {
            for (uint64_t i = 0; i < n; i++) {
                if ((unsigned char)data[at + i] != pattern[in_block + i]) return (int64_t)(at + i);
            }
        }
        at += n;
    }
    return -1;
}

/* CLOCK_MONOTONIC in nanoseconds: one clock for every process on the
 * machine, whatever network namespace it runs in. */
static int64_t monotonic_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) fail("clock_gettime");
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The process's CPU time so far, user plus system, in seconds. */
static double cpu_seconds(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_SELF, &usage) != 0) fail("getrusage");
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           (double)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

struct options {
    const char* role;
    char host[256];
    UINT16 port;
    uint64_t size;
    uint64_t seed;
    double rate_bps;
    double tx_loss_percent;
    int cc;
};

static void parse_address(const char* text, struct options* o) {
    const char* colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof o->host) fail("an address is IP:PORT");
    memcpy(o->host, text, (size_t)(colon - text));
    o->host[colon - text] = '\0';
    char* end;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65534) fail("a port is 1..65534");
    o->port = (UINT16)port;
}

static uint64_t parse_u64(const char* text, const char* what) {
    char* end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0' || end == text) fail(what);
    return (uint64_t)value;
}

static void print_hex(const unsigned char* bytes, size_t len) {
    for (size_t i = 0; i < len; i++) printf("%02x", bytes[i]);
}

static int print_pattern(uint64_t seed) {
    const unsigned char* block = make_pattern(seed);
    printf("{\"len\":%u,\"head\":\"", PATTERN_LEN);
    print_hex(block, 32);
    printf("\",\"tail\":\"");
    print_hex(block + PATTERN_LEN - 32, 32);
    printf("\"}\n");
    return 0;
}

static struct options parse(int argc, char** argv) {
    struct options o;
    memset(&o, 0, sizeof o);
    o.seed = 1;
    if (argc < 2 || (strcmp(argv[1], "recv") != 0 && strcmp(argv[1], "send") != 0)) {
        fail("usage: norm-peer recv|send [options]");
    }
    o.role = argv[1];
    int have_address = 0;
    for (int i = 2; i < argc; i++) {
        const char* flag = argv[i];
        if (strcmp(flag, "--cc") == 0) {
            o.cc = 1;
            continue;
        }
        if (i + 1 >= argc) fail("an option lacks its value");
        const char* value = argv[++i];
        if (strcmp(flag, "--listen") == 0 || strcmp(flag, "--connect") == 0) {
            parse_address(value, &o);
            have_address = 1;
        } else if (strcmp(flag, "--size") == 0) {
            o.size = parse_u64(value, "--size is a number of bytes");
        } else if (strcmp(flag, "--seed") == 0) {
            o.seed = parse_u64(value, "--seed is a number");
        } else if (strcmp(flag, "--rate") == 0) {
            o.rate_bps = (double)parse_u64(value, "--rate is bits per second");
        } else if (strcmp(flag, "--tx-loss") == 0) {
            o.tx_loss_percent = (double)parse_u64(value, "--tx-loss is a whole percentage");
        } else {
            fail("unknown option");
        }
    }
    if (!have_address) fail("--listen or --connect is required");
    if (o.size == 0 || o.size > 0xffffffffull) fail("--size must be 1..4294967295 bytes");
    if (strcmp(o.role, "send") == 0 && o.rate_bps <= 0) fail("--rate is required to send");
    return o;
}

static void configure_rate(NormSessionHandle session, const struct options* o) {
    if (o->rate_bps > 0) NormSetTxRate(session, o->rate_bps);
    /* Congestion control is off unless asked for, as in seed 000. */
    NormSetCongestionControl(session, o->cc != 0, true);
}

static int receive(const struct options* o) {
    const unsigned char* pattern = make_pattern(o->seed);
    NormInstanceHandle instance = NormCreateInstance(false);
    if (instance == NORM_INSTANCE_INVALID) fail("NormCreateInstance");
    NormSessionHandle session = NormCreateSession(instance, o->host, o->port, RECEIVER_ID);
    if (session == NORM_SESSION_INVALID) fail("NormCreateSession");
    /* Listen on the given address only, so that a sender on the same host
     * (a loopback test) can use the same port number on another address;
     * feedback goes back to the sender's own address, as unicast. */
    NormSetRxPortReuse(session, true, o->host, NULL, 0);
    NormSetDefaultUnicastNack(session, true);
    NormSetDefaultSyncPolicy(session, NORM_SYNC_ALL);
    if (!NormStartReceiver(session, SESSION_BUFFER)) fail("NormStartReceiver");
    NormSetRxSocketBuffer(session, SOCKET_BUFFER);

    int64_t first_ns = 0;
    int done = 0;
    NormEvent event;
    while (!done && NormGetNextEvent(instance, &event, true)) {
        switch (event.type) {
            case NORM_REMOTE_SENDER_NEW:
                if (first_ns == 0) first_ns = monotonic_ns();
                break;
            case NORM_RX_OBJECT_ABORTED:
                fail("the sender aborted the object");
                break;
            case NORM_RX_OBJECT_COMPLETED: {
                if (NormObjectGetType(event.object) != NORM_OBJECT_DATA) break;
                uint64_t bytes = (uint64_t)NormObjectGetSize(event.object);
                const char* data = NormDataAccessData(event.object);
                int64_t mismatch = first_mismatch(pattern, data, bytes);
                int64_t end_ns = monotonic_ns();
                int verified = mismatch < 0 && bytes == o->size;
                char mismatch_text[32];
                if (mismatch < 0) {
                    snprintf(mismatch_text, sizeof mismatch_text, "null");
                } else {
                    snprintf(mismatch_text, sizeof mismatch_text, "%lld", (long long)mismatch);
                }
                printf("{\"system\":\"%s\",\"role\":\"recv\",\"bytes\":%llu,\"verified\":%s,"
                       "\"first_mismatch\":%s,\"first_ns\":%lld,\"end_ns\":%lld,\"cpu_s\":%.6f}\n",
                       o->cc ? "norm-cc" : "norm", (unsigned long long)bytes,
                       verified ? "true" : "false", mismatch_text, (long long)first_ns,
                       (long long)end_ns, cpu_seconds());
                fflush(stdout);
                done = 1;
                break;
            }
            default:
                break;
        }
    }
    if (!done) fail("the NORM instance stopped before the payload arrived");

    /* Answer the sender's acknowledgement requests for a while. */
    NormSetUserTimer(session, LINGER_S);
    while (NormGetNextEvent(instance, &event, true)) {
        if (event.type == NORM_USER_TIMEOUT || event.type == NORM_REMOTE_SENDER_INACTIVE) break;
    }
    NormStopReceiver(session);
    NormDestroySession(session);
    NormDestroyInstance(instance);
    return 0;
}

static int send(const struct options* o) {
    const unsigned char* pattern = make_pattern(o->seed);
    char* payload = (char*)malloc(o->size);
    if (!payload) fail("out of memory");
    for (uint64_t at = 0; at < o->size; at += PATTERN_LEN) {
        uint64_t n = o->size - at < PATTERN_LEN ? o->size - at : PATTERN_LEN;
        memcpy(payload + at, pattern, n);
    }

    NormInstanceHandle instance = NormCreateInstance(false);
    if (instance == NORM_INSTANCE_INVALID) fail("NormCreateInstance");
    NormSessionHandle session = NormCreateSession(instance, o->host, o->port, SENDER_ID);
    if (session == NORM_SESSION_INVALID) fail("NormCreateSession");
    /* A transmit port of its own, on which the receiver's unicast feedback
     * arrives; the sender takes no data, so it opens no receive socket. */
    if (!NormSetTxPort(session, (UINT16)(o->port + 1), false, NULL)) fail("NormSetTxPort");
    NormSetTxOnly(session, true, false);
    configure_rate(session, o);
    if (o->tx_loss_percent > 0) NormSetTxLoss(session, o->tx_loss_percent);
    NormAddAckingNode(session, RECEIVER_ID);
    NormSessionId instance_id = (NormSessionId)(monotonic_ns() & 0xffff);
    if (!NormStartSender(session, instance_id, SESSION_BUFFER, SEGMENT_SIZE, BLOCK_SOURCE,
                         BLOCK_PARITY, 0)) {
        fail("NormStartSender");
    }
    NormSetTxSocketBuffer(session, SOCKET_BUFFER);
    /* The transfer starts here, set-up done: NORM has no handshake, and its
     * first packets leave once the object is queued. */
    int64_t start_ns = monotonic_ns();
    NormObjectHandle object = NormDataEnqueue(session, payload, (UINT32)o->size, NULL, 0);
    if (object == NORM_OBJECT_INVALID) fail("NormDataEnqueue");
    /* Ask the receiver to acknowledge the whole object, and repeat until it
     * does: then it has everything. */
    if (!NormSetWatermark(session, object, true)) fail("NormSetWatermark");

    int rounds = 0;
    int acknowledged = 0;
    NormEvent event;
    while (!acknowledged && NormGetNextEvent(instance, &event, true)) {
        if (event.type != NORM_TX_WATERMARK_COMPLETED) continue;
        if (NormGetAckingStatus(session, RECEIVER_ID) == NORM_ACK_SUCCESS) {
            acknowledged = 1;
        } else if (++rounds >= ACK_ROUNDS) {
            fail("the receiver never acknowledged the payload");
        } else {
            NormResetWatermark(session);
        }
    }
    if (!acknowledged) fail("the NORM instance stopped before the payload was acknowledged");
    printf("{\"system\":\"%s\",\"role\":\"send\",\"bytes\":%llu,\"start_ns\":%lld,\"cpu_s\":%.6f}\n",
           o->cc ? "norm-cc" : "norm", (unsigned long long)o->size, (long long)start_ns,
           cpu_seconds());
    fflush(stdout);
    NormStopSender(session);
    NormDestroySession(session);
    NormDestroyInstance(instance);
    free(payload);
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 4 && strcmp(argv[1], "pattern") == 0 && strcmp(argv[2], "--seed") == 0) {
        return print_pattern(parse_u64(argv[3], "--seed is a number"));
    }
    struct options o = parse(argc, argv);
    return strcmp(o.role, "recv") == 0 ? receive(&o) : send(&o);
}
