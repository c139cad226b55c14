/* The floor of an INA frame's cost on this machine: the same frames as `inaemu run --net sim
 * --topo fat-tree --algo ina` (a tree from the workers' edge switches through one aggregation
 * switch a pod to one core switch), simulated in plain C with nothing but what any packet-level
 * simulator of them must do: a 4-ary event heap (an arrival a frame, a service end a switch
 * pass), a link's serialisation and delay, a switch's register row added lane by lane (byte
 * swapped) with its bitmap and count, the aggregate sent up or multicast down as copies, a
 * worker's RESULT compared with the job's lanes, and its next chunk quantized from floats in
 * cold memory into a new frame. No P4 semantics (no parser, tables, checksums or counters), no
 * loss recovery, no timers, no check: a lower bound, not a simulator.
 * scripts/bench_frame_floor.py builds it and runs it beside the native core in the same run;
 * docs/sim-native.md, session 63, says what it showed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EMAX 364
static int E = 364;
#define HDR 58
typedef struct Frame { struct Frame *next; int kind, chunk, from; uint8_t bytes[HDR + 16 + EMAX * 4]; } Frame;
enum { CONTRIB = 0, RESULT = 1 };
enum { EV_ARRIVE = 0, EV_SERVICE = 1 };

typedef struct { uint64_t key; uint32_t node; uint32_t kind; Frame *f; } Ev;
static Ev *heap; static size_t hn, hcap; static uint64_t seq;

static inline int less(const Ev *a, const Ev *b) { return a->key < b->key; }
static void push(uint64_t t, uint32_t node, uint32_t kind, Frame *f) {
    if (hn == hcap) { hcap = hcap ? hcap * 2 : 1024; heap = realloc(heap, hcap * sizeof(Ev)); }
    Ev e = {(t << 20) | (seq++ & 0xFFFFF), node, kind, f};
    size_t i = hn++;
    while (i) { size_t p = (i - 1) / 4; if (!less(&e, &heap[p])) break; heap[i] = heap[p]; i = p; }
    heap[i] = e;
}
static Ev pop(void) {
    Ev top = heap[0], last = heap[--hn];
    size_t i = 0;
    for (;;) {
        size_t c = 4 * i + 1, best; if (c >= hn) break;
        best = c;
        for (size_t j = c + 1; j < c + 4 && j < hn; j++) if (less(&heap[j], &heap[best])) best = j;
        if (!less(&heap[best], &last)) break;
        heap[i] = heap[best]; i = best;
    }
    heap[i] = last;
    return top;
}

static Frame *spare;
static Frame *frame_new(void) { Frame *f = spare; if (f) { spare = f->next; return f; } return malloc(sizeof(Frame)); }
static void frame_free(Frame *f) { f->next = spare; spare = f; }
static void frame_copy(Frame *to, const Frame *from) {   /* the used bytes only */
    to->kind = from->kind; to->chunk = from->chunk; to->from = from->from;
    memcpy(to->bytes, from->bytes, HDR + 16 + (size_t)E * 4);
}

/* nodes: hosts 0..H-1, then switches */
typedef struct { uint64_t busy_until; int to; } Link;
typedef struct {
    int is_host, parent, nchildren, children[64], child_index_of_parent;
    Link up; Link down[64];
    uint64_t service_busy;
    uint8_t *rows; uint64_t *bitmap; int *count; int pool;
    /* host */
    int worker, next_chunk, received; uint64_t sent_at[64]; uint64_t packets, bytes;
} Node;

static Node *nodes; static int H, K, W, NCH, POOL;
static float *grad; static size_t grad_n; static int32_t *job_lanes; static int *job_seen;
static long mismatches;
static uint64_t frames, ser_ps, prop_ps = 1000000;

static void link_send(uint64_t now, Link *l, Frame *f) {
    uint64_t start = now > l->busy_until ? now : l->busy_until;
    l->busy_until = start + ser_ps;
    push(l->busy_until + prop_ps, l->to, EV_ARRIVE, f);
}

static void host_send(uint64_t now, Node *h, int chunk) {
    Frame *f = frame_new();
    f->kind = CONTRIB; f->chunk = chunk; f->from = h - nodes;
    memset(f->bytes, 0, HDR + 16);
    memcpy(f->bytes + HDR, &chunk, 4);
    const float *g = grad + ((size_t)h->worker * 7919u * E + (size_t)chunk * E) % (grad_n - E);
    uint32_t *lanes = (uint32_t *)(f->bytes + HDR + 16);
    for (int i = 0; i < E; i++) {   /* round to nearest even by the float's own adder */
        float t = g[i] * 1048576.0f + 12582912.0f;
        uint32_t bits; memcpy(&bits, &t, 4);
        lanes[i] = __builtin_bswap32(bits - 0x4B400000u);
    }
    h->sent_at[chunk & 63] = now;
    h->packets++; h->bytes += sizeof f->bytes;
    link_send(now, &h->up, f);
}

static void host_receive(uint64_t now, Node *h, Frame *f) {
    int c = f->chunk;
    const uint32_t *lanes = (const uint32_t *)(f->bytes + HDR + 16);
    int32_t *job = job_lanes + (size_t)(c % 4096) * EMAX;
    if (job_seen[c % 4096] != c + 1) { memcpy(job, lanes, E * 4); job_seen[c % 4096] = c + 1; }
    else if (memcmp(job, lanes, E * 4)) mismatches++;
    h->received++;
    (void)h->sent_at[c & 63];
    frame_free(f);
    if (h->next_chunk < NCH) host_send(now, h, h->next_chunk++);
}

static void switch_service(uint64_t now, Node *s, Frame *f) {
    int c = f->chunk, slot = c % s->pool;
    if (f->kind == RESULT) {   /* from the parent: multicast down, clear the slot */
        memset(s->rows + (size_t)slot * (EMAX * 4 + 64), 0, E * 4);
        for (int i = 0; i < s->nchildren; i++) {
            Frame *g = i == s->nchildren - 1 ? f : frame_new();
            if (g != f) frame_copy(g, f);
            link_send(now, &s->down[i], g);
        }
        return;
    }
    int child = f->from;
    uint64_t bit = 1ull << child;
    if (s->bitmap[slot] & bit) { frame_free(f); return; }
    s->bitmap[slot] |= bit;
    int32_t *row = (int32_t *)(s->rows + (size_t)slot * (EMAX * 4 + 64));
    const uint32_t *lanes = (const uint32_t *)(f->bytes + HDR + 16);
    for (int i = 0; i < E; i++) row[i] += (int32_t)__builtin_bswap32(lanes[i]);
    if (++s->count[slot] < s->nchildren) { frame_free(f); return; }
    s->count[slot] = 0; s->bitmap[slot] = 0;
    uint32_t *out = (uint32_t *)(f->bytes + HDR + 16);
    for (int i = 0; i < E; i++) out[i] = __builtin_bswap32((uint32_t)row[i]);
    if (s->parent < 0) {       /* root: the result goes down */
        f->kind = RESULT;
        memset(row, 0, E * 4);
        for (int i = 0; i < s->nchildren; i++) {
            Frame *g = i == s->nchildren - 1 ? f : frame_new();
            if (g != f) frame_copy(g, f);
            link_send(now, &s->down[i], g);
        }
    } else {
        f->from = s->child_index_of_parent;
        link_send(now, &s->up, f);
    }
}

static void fix_from(Frame *f, Node *s, int from_node) {
    /* a CONTRIB from a host carries its node; map to the child's index at this switch */
    if (f->kind == CONTRIB && nodes[from_node].is_host) {
        for (int i = 0; i < s->nchildren; i++) if (s->children[i] == from_node) { f->from = i; return; }
    }
}

static void usage(void) {
    fprintf(stderr, "usage: floor K WORKERS CHUNKS WINDOW POOL ELEMS BW_MBPS DELAY_US\n");
    exit(2);
}

int main(int argc, char **argv) {
    if (argc != 9) usage();
    K = atoi(argv[1]); int workers = atoi(argv[2]); NCH = atoi(argv[3]); W = atoi(argv[4]);
    POOL = atoi(argv[5]); E = atoi(argv[6]); double bw = atof(argv[7]); double delay_us = atof(argv[8]);
    H = K * K * K / 4;
    if (K < 2 || K % 2 || workers < 2 || workers > H || E < 1 || E > EMAX || W < 1 || W > POOL || POOL < 1) usage();
    int pods = K, half = K / 2, edges = pods * half;
    int n = H + edges + pods + 1, core = n - 1;
    nodes = calloc(n, sizeof(Node));
    ser_ps = bw > 0 ? (uint64_t)((HDR + 16 + E * 4 + 24) * 8 * 1e6 / bw) : 0;
    prop_ps = (uint64_t)(delay_us * 1e6);
    for (int w = 0; w < workers; w++) {   /* spread over the hosts as inaemu's runs spread them */
        int h = (int)((long)w * H / workers), e = h / half; Node *edge = &nodes[H + e];
        nodes[h].is_host = 1; nodes[h].worker = w; nodes[h].parent = H + e; nodes[h].up.to = H + e;
        edge->down[edge->nchildren].to = h; edge->children[edge->nchildren++] = h;
    }
    for (int e = 0; e < edges; e++) {
        Node *edge = &nodes[H + e]; if (!edge->nchildren) continue;
        int agg = H + edges + e / half; Node *a = &nodes[agg];
        edge->parent = agg; edge->up.to = agg; edge->child_index_of_parent = a->nchildren;
        a->down[a->nchildren].to = H + e; a->children[a->nchildren++] = H + e;
    }
    for (int p = 0; p < pods; p++) {
        Node *a = &nodes[H + edges + p]; if (!a->nchildren) continue;
        Node *c = &nodes[core];
        a->parent = core; a->up.to = core; a->child_index_of_parent = c->nchildren;
        c->down[c->nchildren].to = H + edges + p; c->children[c->nchildren++] = H + edges + p;
    }
    nodes[core].parent = -1;
    for (int i = H; i < n; i++) {
        Node *s = &nodes[i]; if (!s->nchildren) continue;
        s->pool = POOL;
        s->rows = calloc((size_t)s->pool, EMAX * 4 + 64);
        s->bitmap = calloc(s->pool, 8); s->count = calloc(s->pool, sizeof(int));
    }
    grad_n = (size_t)64 << 20;   /* 256 MB of floats: cold rows, as drawn-ahead gradients */
    grad = malloc(grad_n * sizeof(float));
    for (size_t i = 0; i < grad_n; i++) grad[i] = (float)((int)(i * 2654435761u % 2001) - 1000) / 1000.0f;
    job_lanes = calloc((size_t)4096, EMAX * 4); job_seen = calloc(4096, sizeof(int));
    struct timespec t0, t1; clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int h = 0; h < H; h++)
        for (int c = 0; nodes[h].is_host && c < W && c < NCH; c++)
            host_send(0, &nodes[h], c), nodes[h].next_chunk = c + 1;
    uint64_t events = 0, last = 0;
    while (hn) {
        Ev e = pop(); events++;
        uint64_t now = e.key >> 20; last = now;
        Node *d = &nodes[e.node];
        if (e.kind == EV_ARRIVE) {
            frames++;
            if (d->is_host) host_receive(now, d, e.f);
            else {
                if (e.f->kind == CONTRIB && e.f->from >= 0 && e.f->from < H && d - nodes < H + edges)
                    fix_from(e.f, d, e.f->from);
                uint64_t at = (now > d->service_busy ? now : d->service_busy) + 1000;
                d->service_busy = at;
                push(at, e.node, EV_SERVICE, e.f);
            }
        } else switch_service(now, d, e.f);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    long done = 0; for (int h = 0; h < H; h++) done += nodes[h].received;
    printf("{\"frames\": %llu, \"events\": %llu, \"seconds\": %.6f, \"results\": %ld, \"expected\": %ld, \"virtual_s\": %.6f, \"mismatches\": %ld}\n",
           (unsigned long long)frames, (unsigned long long)events, s, done, (long)workers * NCH, last / 1e12, mismatches);
    return done == (long)workers * NCH && !mismatches ? 0 : 1;
}
