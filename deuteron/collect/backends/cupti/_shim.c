/*
 * Deuteron's CUPTI shim: the part of the GPU backend that must run inside CUDA's own calls.
 *
 * Why C: CUPTI calls us on its own threads (buffer completion) and inside every kernel launch.
 * A Python callback there would need the GIL on a thread CUPTI owns, which can deadlock, and
 * would cost microseconds per launch. So this file only records facts, without the GIL where
 * it can:
 *   - at each launch API (driver and runtime), the correlation id and the launching thread's
 *     context (a node id Python set in a thread slot, or a Python call path walked here);
 *   - at each graph-node creation or clone, the node's id and the same context, so kernels
 *     replayed from a CUDA graph can be filed where they were captured;
 *   - each completed activity buffer, copied down to the fixed leading fields of kernel records.
 * Python drains all of it in bulk (numpy) whenever it likes: see records.py and join.py.
 *
 * No CUDA headers are needed to build this: libcupti and libcuda are opened with dlopen at run
 * time, and the few structures and constants used are declared below, as CUPTI's public headers
 * define them (stable since CUDA 11; checked against CUDA 13.0's headers by a test on the GPU).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the slice of CUPTI's ABI this shim uses ------------------------------------------------- */

typedef int CUptiResult;
typedef void *SubscriberHandle;
typedef void *CUcontext;
typedef void *CUgraphNode;
typedef void (*CallbackFunc)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*BufferRequestedFunc)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*BufferCompletedFunc)(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                    size_t valid);

typedef struct {
    uint32_t kind;
} ActivityHeader;

typedef struct { /* CUpti_CallbackData */
    int callbackSite; /* 0: API enter, 1: API exit */
    const char *functionName;
    const void *functionParams;
    void *functionReturnValue;
    const char *symbolName;
    CUcontext context;
    uint32_t contextUid;
    uint64_t *correlationData;
    uint32_t correlationId;
} CallbackData;

typedef struct { /* CUpti_ResourceData */
    CUcontext context;
    void *resourceHandle;
    void *resourceDescriptor;
} ResourceData;

typedef struct { /* CUpti_GraphData (leading fields) */
    void *graph;
    void *originalGraph;
    CUgraphNode node;
    CUgraphNode originalNode;
} GraphData;

_Static_assert(offsetof(CallbackData, context) == 40, "CUpti_CallbackData layout");
_Static_assert(offsetof(CallbackData, correlationId) == 64, "CUpti_CallbackData layout");
_Static_assert(offsetof(ResourceData, resourceDescriptor) == 16, "CUpti_ResourceData layout");
_Static_assert(offsetof(GraphData, originalNode) == 24, "CUpti_GraphData layout");

enum { DOMAIN_DRIVER = 1, DOMAIN_RUNTIME = 2, DOMAIN_RESOURCE = 3 };
enum { ACT_KERNEL = 3, ACT_CONCURRENT_KERNEL = 10 };
enum { RES_GRAPHNODE_CREATED = 13, RES_GRAPHNODE_CLONED = 20 };
enum { FLUSH_FORCED = 1 };

/* Launch APIs: cuLaunchKernel(+_ptsz), cuLaunchCooperativeKernel(+_ptsz), cuLaunchKernelEx(+_ptsz). */
static const uint32_t DRIVER_LAUNCH[] = {307, 442, 477, 478, 652, 653};
static const uint32_t DRIVER_GRAPH[] = {514, 515}; /* cuGraphLaunch(+_ptsz) */
/* cudaLaunchKernel, cudaLaunchCooperativeKernel, cudaLaunchKernelExC (each +_ptsz). */
static const uint32_t RUNTIME_LAUNCH[] = {211, 214, 269, 270, 430, 431};
static const uint32_t RUNTIME_GRAPH[] = {311, 312}; /* cudaGraphLaunch(+_ptsz) */

/* Bytes of each kernel record kept: through graphId (offset 156), common to Kernel5..Kernel10. */
#define KERNEL_RECORD_BYTES 160

static struct {
    CUptiResult (*subscribe)(SubscriberHandle *, CallbackFunc, void *);
    CUptiResult (*unsubscribe)(SubscriberHandle);
    CUptiResult (*enable_callback)(uint32_t, SubscriberHandle, int, uint32_t);
    CUptiResult (*register_callbacks)(BufferRequestedFunc, BufferCompletedFunc);
    CUptiResult (*activity_enable)(int);
    CUptiResult (*activity_disable)(int);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*next_record)(uint8_t *, size_t, ActivityHeader **);
    CUptiResult (*dropped_records)(CUcontext, uint32_t, size_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
    CUptiResult (*get_timestamp)(uint64_t *);
    CUptiResult (*graph_node_id)(CUgraphNode, uint64_t *);
    CUptiResult (*finalize)(void);
} cupti;

static void *g_cupti_handle;
static SubscriberHandle g_subscriber;
static atomic_int g_on;        /* recording launches */
static atomic_int g_paused;    /* a deactivated session: launches are marked, not attributed */
static int g_mode;             /* 0: shadow (thread slots), 1: python (call paths) */
/* The torch context's probe: the launching thread's module/op place, asked at each launch (C,
   no Python, no GIL) with the kernel's name (NULL for a graph launch) and whether the entry is a
   launch (0: a graph node made by a captured launch, which was asked already); NULL when no torch
   context records. */
static uint32_t (*g_op_probe)(const char *symbol, int is_launch);
static atomic_uint_fast64_t g_main_ctx; /* the starting thread's context, inherited by others */

/* ---- per-thread launch entries ---------------------------------------------------------------- */

enum { ENTRY_LAUNCH = 1, ENTRY_GRAPH_LAUNCH = 2, ENTRY_GRAPH_NODE = 3, ENTRY_GRAPH_CLONE = 4 };
#define CTX_OTHER_THREAD (1ULL << 63)
#define CTX_PAUSED (1ULL << 62)

typedef struct {
    uint64_t key;  /* correlation id, or graph node id */
    uint64_t ctx;  /* context id (flags in the top bits), or the original node of a clone */
    uint64_t ts;   /* CUPTI timestamp at the launch */
    uint32_t state;
    uint32_t meta;
    uint16_t kind;
    uint16_t thread;
    uint32_t op;   /* the torch context's place of the launch (a trie id, see _torch_ops.cpp); 0: none */
} Entry;
_Static_assert(sizeof(Entry) == 40, "Entry layout is read by records.py");

#define CHUNK_CAP 4096
typedef struct Chunk {
    _Atomic size_t n; /* written by the owning thread only */
    size_t read;      /* read by the drain only, under g_mu */
    struct Chunk *next;
    Entry e[CHUNK_CAP];
} Chunk;

typedef struct ThreadState {
    Chunk *cur;
    uint64_t ctx;
    uint32_t state;
    uint32_t pending_meta;
    uint32_t launch_meta; /* the last launch's metadata id: a graph node it creates during capture keeps it */
    uint64_t last_corr; /* a runtime launch calls the driver's with the same correlation id */
    int has_ctx;
    int is_main;
    uint16_t index;
    unsigned long ident;
    int reported;
    struct ThreadState *next;
} ThreadState;

#define NO_CORR UINT64_MAX /* no launch seen yet in this session */

static __thread ThreadState *t_state;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static ThreadState *g_threads;
static uint16_t g_nthreads;
static Chunk *g_full_head, *g_full_tail;
static atomic_size_t g_full_entries;
static atomic_size_t g_lost_entries;

static Chunk *chunk_new(void) {
    Chunk *c = (Chunk *)malloc(sizeof(Chunk));
    if (c) {
        atomic_store_explicit(&c->n, 0, memory_order_relaxed);
        c->read = 0;
        c->next = NULL;
    }
    return c;
}

static ThreadState *thread_state(void) {
    ThreadState *ts = t_state;
    if (ts) return ts;
    ts = (ThreadState *)calloc(1, sizeof(ThreadState));
    if (!ts) return NULL;
    ts->cur = chunk_new();
    if (!ts->cur) {
        free(ts);
        return NULL;
    }
    ts->ident = (unsigned long)pthread_self();
    ts->last_corr = NO_CORR;
    pthread_mutex_lock(&g_mu);
    ts->index = g_nthreads++;
    ts->next = g_threads;
    g_threads = ts;
    pthread_mutex_unlock(&g_mu);
    t_state = ts;
    return ts;
}

static Entry *entry_next(ThreadState *ts) {
    Chunk *c = ts->cur;
    size_t n = atomic_load_explicit(&c->n, memory_order_relaxed);
    if (n == CHUNK_CAP) { /* retire the full chunk to the drain's queue */
        Chunk *fresh = chunk_new();
        if (!fresh) return NULL;
        pthread_mutex_lock(&g_mu);
        if (g_full_tail) g_full_tail->next = c;
        else g_full_head = c;
        g_full_tail = c;
        ts->cur = fresh;
        pthread_mutex_unlock(&g_mu);
        atomic_fetch_add(&g_full_entries, CHUNK_CAP);
        c = fresh;
    }
    return &c->e[atomic_load_explicit(&c->n, memory_order_relaxed)];
}

static void entry_commit(ThreadState *ts) {
    Chunk *c = ts->cur;
    atomic_store_explicit(&c->n, atomic_load_explicit(&c->n, memory_order_relaxed) + 1,
                          memory_order_release);
}

static uint64_t now_ts(void) {
    uint64_t t = 0;
    cupti.get_timestamp(&t);
    return t;
}

/* ---- Python call paths, captured at launch ----------------------------------------------------- */

#define MAX_DEPTH 128

typedef struct {
    uint64_t hash;
    uint32_t id;
    uint32_t depth;
    uintptr_t *keys; /* depth pairs of (code object, instruction offset or line) */
} PathSlot;

typedef struct {
    uint32_t id;
    uint32_t depth;
    PyObject **codes; /* strong references, innermost first */
    int *lines;
} NewPath;

/* All path state is touched only while holding the GIL. */
static PathSlot *g_paths;
static size_t g_paths_cap, g_paths_len;
static uint32_t g_next_path_id = 16; /* ids below 16 are reserved */
static NewPath *g_new_paths;
static size_t g_new_len, g_new_cap;

static uint64_t hash_keys(const uintptr_t *keys, uint32_t n) {
    uint64_t h = 1469598103934665603ULL ^ n;
    for (uint32_t i = 0; i < n; i++) {
        h ^= (uint64_t)keys[i];
        h *= 1099511628211ULL;
        h ^= h >> 29;
    }
    return h ? h : 1;
}

static int paths_grow(void) {
    size_t cap = g_paths_cap ? g_paths_cap * 2 : 1024;
    PathSlot *slots = (PathSlot *)calloc(cap, sizeof(PathSlot));
    if (!slots) return -1;
    for (size_t i = 0; i < g_paths_cap; i++) {
        if (!g_paths[i].hash) continue;
        size_t j = g_paths[i].hash & (cap - 1);
        while (slots[j].hash) j = (j + 1) & (cap - 1);
        slots[j] = g_paths[i];
    }
    free(g_paths);
    g_paths = slots;
    g_paths_cap = cap;
    return 0;
}

/* Path ids stay below the ids the session hands out itself (placement.FIRST_HANDED_OUT_ID): both are
   bound in one table. Past that many distinct paths, new ones are filed as no Python context. */
#define PATH_ID_LIMIT (1u << 23)

static uint32_t path_record(PyFrameObject **frames, const uintptr_t *keys, uint32_t depth) {
    if ((g_paths_len + 1) * 2 > g_paths_cap && paths_grow() < 0) return 0;
    uint64_t h = hash_keys(keys, 2 * depth);
    size_t j = h & (g_paths_cap - 1);
    for (;; j = (j + 1) & (g_paths_cap - 1)) {
        PathSlot *s = &g_paths[j];
        if (!s->hash) break;
        if (s->hash == h && s->depth == depth && memcmp(s->keys, keys, 2 * depth * sizeof(uintptr_t)) == 0)
            return s->id;
    }
    /* A new path: keep its code objects alive and compute its lines once. */
    if (g_next_path_id >= PATH_ID_LIMIT) return 0;
    if (g_new_len == g_new_cap) {
        size_t cap = g_new_cap ? g_new_cap * 2 : 256;
        NewPath *grown = (NewPath *)realloc(g_new_paths, cap * sizeof(NewPath));
        if (!grown) return 0;
        g_new_paths = grown;
        g_new_cap = cap;
    }
    uintptr_t *copy = (uintptr_t *)malloc(2 * depth * sizeof(uintptr_t) + 1);
    PyObject **codes = (PyObject **)malloc(depth * sizeof(PyObject *) + 1);
    int *lines = (int *)malloc(depth * sizeof(int) + 1);
    if (!copy || !codes || !lines) {
        free(copy);
        free(codes);
        free(lines);
        return 0;
    }
    memcpy(copy, keys, 2 * depth * sizeof(uintptr_t));
    for (uint32_t i = 0; i < depth; i++) {
        codes[i] = (PyObject *)keys[2 * i];
        Py_INCREF(codes[i]); /* the slot's key stays valid while the path is known */
        lines[i] = PyFrame_GetLineNumber(frames[i]);
    }
    uint32_t id = g_next_path_id++;
    g_paths[j].hash = h;
    g_paths[j].id = id;
    g_paths[j].depth = depth;
    g_paths[j].keys = copy;
    g_paths_len++;
    NewPath *np = &g_new_paths[g_new_len++];
    np->id = id;
    np->depth = depth;
    np->codes = codes;
    np->lines = lines;
    return id;
}

/* Whether the interpreter is shutting down: no frame may be read then (public since 3.13). */
#if PY_VERSION_HEX >= 0x030D0000
#define interpreter_finalizing() Py_IsFinalizing()
#else
#define interpreter_finalizing() _Py_IsFinalizing()
#endif

/* The launching thread's Python call path as a path id; 0 when the thread runs no Python. */
static uint64_t python_path(void) {
    if (PyGILState_GetThisThreadState() == NULL || interpreter_finalizing()) return 0;
    PyGILState_STATE gil = PyGILState_Ensure();
    PyFrameObject *frames[MAX_DEPTH];
    uintptr_t keys[2 * MAX_DEPTH];
    uint32_t depth = 0;
    PyFrameObject *f = PyThreadState_GetFrame(PyThreadState_Get());
    while (f != NULL && depth < MAX_DEPTH) {
        PyCodeObject *code = PyFrame_GetCode(f);
        keys[2 * depth] = (uintptr_t)code;
#if PY_VERSION_HEX >= 0x030B0000
        keys[2 * depth + 1] = (uintptr_t)PyFrame_GetLasti(f);
#else
        keys[2 * depth + 1] = (uintptr_t)PyFrame_GetLineNumber(f);
#endif
        Py_DECREF(code); /* the frame keeps it alive */
        frames[depth++] = f;
        f = PyFrame_GetBack(f);
    }
    Py_XDECREF(f);
    uint64_t id = depth ? path_record(frames, keys, depth) : 0;
    for (uint32_t i = 0; i < depth; i++) Py_DECREF(frames[i]);
    PyGILState_Release(gil);
    return id;
}

static uint64_t launch_context(ThreadState *ts) {
    if (atomic_load_explicit(&g_paused, memory_order_relaxed)) return CTX_PAUSED;
    if (g_mode == 1) return python_path();
    if (ts->has_ctx) return ts->ctx;
    return atomic_load_explicit(&g_main_ctx, memory_order_relaxed) | CTX_OTHER_THREAD;
}

/* ---- native call paths (-c native) ----------------------------------------------------------------
   The C/C++ return addresses at a launch, for code that launches from C++ (libtorch's ops, XLA,
   cuBLAS callers): glibc's backtrace() unwinds with the libraries' unwind tables (no frame
   pointers needed), each distinct path is kept once, and Python symbolizes the addresses. */

#define NATIVE_DEPTH 64
#define NATIVE_PLACE 0x80000000u /* flags a launch's op column as a native path id */
static atomic_int g_native;
static pthread_mutex_t g_nmu = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *g_npool;                  /* every path's addresses, innermost first */
static size_t g_npool_len, g_npool_cap;
static uint32_t *g_nstart;                  /* path i (id i + 1): addresses [g_nstart[i], g_nstart[i + 1]) */
static uint32_t g_npaths, g_nstart_cap;
static uint64_t *g_nhash;                   /* open addressing: each slot's path hash and id (0: empty) */
static uint32_t *g_nid;
static size_t g_nslots;

static uint64_t native_hash(void *const *frames, int n) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t)(uintptr_t)frames[i]) * 1099511628211ULL;
    return h ^ (uint64_t)n;
}

static int native_same(uint32_t id, void *const *frames, int n) {
    uint32_t a = g_nstart[id - 1], b = g_nstart[id];
    if (b - a != (uint32_t)n) return 0;
    for (int i = 0; i < n; i++)
        if (g_npool[a + (uint32_t)i] != (uintptr_t)frames[i]) return 0;
    return 1;
}

static int native_grow_slots(void) { /* under g_nmu */
    size_t slots = g_nslots ? g_nslots * 2 : 4096;
    uint64_t *hash = (uint64_t *)calloc(slots, sizeof(uint64_t));
    uint32_t *ids = (uint32_t *)calloc(slots, sizeof(uint32_t));
    if (!hash || !ids) {
        free(hash);
        free(ids);
        return -1;
    }
    for (size_t i = 0; i < g_nslots; i++) {
        if (!g_nid[i]) continue;
        size_t j = (size_t)g_nhash[i] & (slots - 1);
        while (ids[j]) j = (j + 1) & (slots - 1);
        hash[j] = g_nhash[i];
        ids[j] = g_nid[i];
    }
    free(g_nhash);
    free(g_nid);
    g_nhash = hash;
    g_nid = ids;
    g_nslots = slots;
    return 0;
}

/* The id of this path of return addresses (made on first sight); 0 when the tables are full. */
static uint32_t native_path_id(void *const *frames, int n) {
    uint64_t h = native_hash(frames, n);
    uint32_t id = 0;
    pthread_mutex_lock(&g_nmu);
    if ((g_npaths + 1) * 2 >= g_nslots && native_grow_slots() != 0) goto out;
    size_t j = (size_t)h & (g_nslots - 1);
    while (g_nid[j]) {
        if (g_nhash[j] == h && native_same(g_nid[j], frames, n)) {
            id = g_nid[j];
            goto out;
        }
        j = (j + 1) & (g_nslots - 1);
    }
    if (g_npaths + 2 > g_nstart_cap) {
        uint32_t cap = g_nstart_cap ? g_nstart_cap * 2 : 1024;
        uint32_t *grown = (uint32_t *)realloc(g_nstart, cap * sizeof(uint32_t));
        if (!grown) goto out;
        g_nstart = grown;
        g_nstart_cap = cap;
        if (g_npaths == 0) g_nstart[0] = 0;
    }
    if (g_npool_len + (size_t)n > g_npool_cap) {
        size_t cap = g_npool_cap ? g_npool_cap * 2 : 16384;
        while (cap < g_npool_len + (size_t)n) cap *= 2;
        uintptr_t *grown = (uintptr_t *)realloc(g_npool, cap * sizeof(uintptr_t));
        if (!grown) goto out;
        g_npool = grown;
        g_npool_cap = cap;
    }
    if (g_npaths + 1 >= NATIVE_PLACE) goto out;
    for (int i = 0; i < n; i++) g_npool[g_npool_len + (size_t)i] = (uintptr_t)frames[i];
    g_npool_len += (size_t)n;
    g_npaths++;
    g_nstart[g_npaths] = (uint32_t)g_npool_len;
    id = g_npaths;
    g_nhash[j] = h;
    g_nid[j] = id;
out:
    pthread_mutex_unlock(&g_nmu);
    return id;
}

/* The calling thread's native path now, as a flagged id for the op column (0: none). Exported
   for tests, which call it from C code of their own. */
uint32_t deuteron_native_here(void) {
    void *frames[NATIVE_DEPTH];
    int n = backtrace(frames, NATIVE_DEPTH);
    if (n <= 1) return 0;
    uint32_t id = native_path_id(frames + 1, n - 1); /* this function's own frame left out */
    return id ? NATIVE_PLACE | id : 0;
}

/* ---- CUPTI callbacks --------------------------------------------------------------------------- */

static int in_list(uint32_t cbid, const uint32_t *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (list[i] == cbid) return 1;
    return 0;
}

static void record(uint16_t kind, uint64_t key, uint64_t ctx_or_orig, int with_context, const char *symbol) {
    ThreadState *ts = thread_state();
    if (!ts) {
        atomic_fetch_add(&g_lost_entries, 1);
        return;
    }
    if (kind <= ENTRY_GRAPH_LAUNCH) {
        if (key == ts->last_corr) return; /* the driver call nested in a runtime launch */
        ts->last_corr = key;
    }
    uint64_t ctx = with_context ? launch_context(ts) : ctx_or_orig;
    Entry *e = entry_next(ts);
    if (!e) {
        atomic_fetch_add(&g_lost_entries, 1);
        return;
    }
    e->key = key;
    e->ctx = ctx;
    e->ts = kind <= ENTRY_GRAPH_LAUNCH ? now_ts() : 0;
    e->state = ts->state;
    e->meta = kind <= ENTRY_GRAPH_LAUNCH ? ts->pending_meta : kind == ENTRY_GRAPH_NODE ? ts->launch_meta : 0;
    e->kind = kind;
    e->thread = ts->index;
    if (kind == ENTRY_GRAPH_CLONE)
        e->op = 0;
    else if (g_op_probe != NULL)
        e->op = g_op_probe(symbol, kind <= ENTRY_GRAPH_LAUNCH);
    else
        e->op = atomic_load_explicit(&g_native, memory_order_relaxed) ? deuteron_native_here() : 0;
    if (kind <= ENTRY_GRAPH_LAUNCH) {
        ts->launch_meta = ts->pending_meta;
        ts->pending_meta = 0;
    } else if (kind == ENTRY_GRAPH_NODE) {
        ts->launch_meta = 0; /* one node per captured launch */
    }
    entry_commit(ts);
}

static void on_callback(void *userdata, int domain, uint32_t cbid, const void *cbdata) {
    (void)userdata;
    if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return;
    if (domain == DOMAIN_RESOURCE) {
        const ResourceData *rd = (const ResourceData *)cbdata;
        const GraphData *gd = (const GraphData *)rd->resourceDescriptor;
        uint64_t id = 0, orig = 0;
        if (!gd || cupti.graph_node_id(gd->node, &id) != 0) return;
        if (cbid == RES_GRAPHNODE_CREATED) {
            record(ENTRY_GRAPH_NODE, id, 0, 1, NULL);
        } else if (cbid == RES_GRAPHNODE_CLONED) {
            if (cupti.graph_node_id(gd->originalNode, &orig) == 0) record(ENTRY_GRAPH_CLONE, id, orig, 0, NULL);
        }
        return;
    }
    const CallbackData *cb = (const CallbackData *)cbdata;
    if (cb->callbackSite != 0) return;
    int graph = domain == DOMAIN_DRIVER ? in_list(cbid, DRIVER_GRAPH, 2) : in_list(cbid, RUNTIME_GRAPH, 2);
    record(graph ? ENTRY_GRAPH_LAUNCH : ENTRY_LAUNCH, cb->correlationId, 0, 1, graph ? NULL : cb->symbolName);
}

/* Completed kernel records, compacted; filled on CUPTI's thread, swapped out by drain. */
static pthread_mutex_t g_kmu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_kernels;
static size_t g_kernels_len, g_kernels_cap; /* in records */
static uint64_t g_dropped, g_lost_kernels, g_buffers, g_other_records;

#define BUFFER_BYTES (8u << 20)

static void on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    void *p = NULL;
    if (posix_memalign(&p, 8, BUFFER_BYTES) != 0) p = NULL;
    *buffer = (uint8_t *)p;
    *size = p ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)size;
    ActivityHeader *r = NULL;
    pthread_mutex_lock(&g_kmu);
    g_buffers++;
    while (buffer && valid && cupti.next_record(buffer, valid, &r) == 0) {
        if (r->kind != ACT_CONCURRENT_KERNEL && r->kind != ACT_KERNEL) {
            g_other_records++;
            continue;
        }
        if (g_kernels_len == g_kernels_cap) {
            size_t cap = g_kernels_cap ? g_kernels_cap * 2 : 4096;
            uint8_t *grown = (uint8_t *)realloc(g_kernels, cap * KERNEL_RECORD_BYTES);
            if (!grown) {
                g_lost_kernels++;
                continue;
            }
            g_kernels = grown;
            g_kernels_cap = cap;
        }
        memcpy(g_kernels + g_kernels_len * KERNEL_RECORD_BYTES, r, KERNEL_RECORD_BYTES);
        g_kernels_len++;
    }
    size_t dropped = 0;
    if (cupti.dropped_records(ctx, stream, &dropped) == 0) g_dropped += dropped;
    pthread_mutex_unlock(&g_kmu);
    free(buffer);
}

/* ---- libcuda, for device facts and synchronisation ------------------------------------------ */

static struct {
    int (*init)(unsigned);
    int (*device_get_count)(int *);
    int (*device_get)(int *, int);
    int (*device_get_attribute)(int *, int, int);
    int (*device_get_name)(char *, int, int);
    int (*primary_ctx_get_state)(int, unsigned *, int *);
    int (*primary_ctx_retain)(CUcontext *, int);
    int (*primary_ctx_release)(int);
    int (*ctx_push)(CUcontext);
    int (*ctx_pop)(CUcontext *);
    int (*ctx_synchronize)(void);
} cuda;
static void *g_cuda_handle;

static const char *load_cuda(void) {
    if (g_cuda_handle) return NULL;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h) return "libcuda.so.1 (the NVIDIA driver) could not be loaded";
#define SYM(field, name)                                                        \
    *(void **)(&cuda.field) = dlsym(h, name);                                   \
    if (!cuda.field) return "libcuda.so.1 lacks " name;
    SYM(init, "cuInit");
    SYM(device_get_count, "cuDeviceGetCount");
    SYM(device_get, "cuDeviceGet");
    SYM(device_get_attribute, "cuDeviceGetAttribute");
    SYM(device_get_name, "cuDeviceGetName");
    SYM(primary_ctx_get_state, "cuDevicePrimaryCtxGetState");
    SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    SYM(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
    SYM(ctx_push, "cuCtxPushCurrent_v2");
    SYM(ctx_pop, "cuCtxPopCurrent_v2");
    SYM(ctx_synchronize, "cuCtxSynchronize");
#undef SYM
    g_cuda_handle = h;
    return NULL;
}

/* ---- Python module ----------------------------------------------------------------------------- */

static PyObject *ShimError;

static PyObject *cupti_error(const char *what, CUptiResult r) {
    const char *text = NULL;
    if (!cupti.result_string || cupti.result_string(r, &text) != 0 || !text) text = "unknown CUPTI error";
    PyObject *exc = Py_BuildValue("(siss)", what, (int)r, text, "");
    if (exc) {
        PyErr_SetObject(ShimError, exc);
        Py_DECREF(exc);
    }
    return NULL;
}

static PyObject *py_cuda_devices(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    const char *why = load_cuda();
    if (why) return PyUnicode_FromString(why);
    int r = cuda.init(0);
    if (r != 0) return PyUnicode_FromFormat("cuInit failed with CUDA error %d (no usable NVIDIA GPU)", r);
    int n = 0;
    if (cuda.device_get_count(&n) != 0) return PyUnicode_FromString("cuDeviceGetCount failed");
    return PyLong_FromLong(n);
}

static PyObject *py_load(PyObject *self, PyObject *arg) {
    (void)self;
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path) return NULL;
    if (g_cupti_handle) Py_RETURN_NONE;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        PyErr_Format(PyExc_OSError, "%s", err ? err : path);
        return NULL;
    }
#define SYM(field, name)                                                                   \
    *(void **)(&cupti.field) = dlsym(h, name);                                             \
    if (!cupti.field) {                                                                    \
        dlclose(h);                                                                        \
        PyErr_Format(PyExc_OSError, "%s lacks %s (CUPTI from CUDA 11 or newer is needed)", \
                     path, name);                                                          \
        return NULL;                                                                       \
    }
    SYM(subscribe, "cuptiSubscribe");
    SYM(unsubscribe, "cuptiUnsubscribe");
    SYM(enable_callback, "cuptiEnableCallback");
    SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
    SYM(activity_enable, "cuptiActivityEnable");
    SYM(activity_disable, "cuptiActivityDisable");
    SYM(flush_all, "cuptiActivityFlushAll");
    SYM(next_record, "cuptiActivityGetNextRecord");
    SYM(dropped_records, "cuptiActivityGetNumDroppedRecords");
    SYM(result_string, "cuptiGetResultString");
    SYM(get_timestamp, "cuptiGetTimestamp");
    SYM(graph_node_id, "cuptiGetGraphNodeId");
    SYM(finalize, "cuptiFinalize");
#undef SYM
    g_cupti_handle = h;
    Py_RETURN_NONE;
}

static int enable_list(int domain, const uint32_t *ids, size_t n) {
    for (size_t i = 0; i < n; i++) {
        CUptiResult r = cupti.enable_callback(1, g_subscriber, domain, ids[i]);
        if (r != 0) return r;
    }
    return 0;
}

static PyObject *py_start(PyObject *self, PyObject *args) {
    (void)self;
    int mode, apis;
    unsigned long long root;
    /* apis: bit 0 driver launch APIs, bit 1 runtime twins, bit 2 graph-node resources */
    if (!PyArg_ParseTuple(args, "iKi", &mode, &root, &apis)) return NULL;
    if (!g_cupti_handle) {
        PyErr_SetString(PyExc_RuntimeError, "libcupti is not loaded");
        return NULL;
    }
    if (g_subscriber) {
        PyErr_SetString(PyExc_RuntimeError, "the CUPTI shim is already started");
        return NULL;
    }
    g_mode = mode;
    atomic_store(&g_main_ctx, root);
    ThreadState *ts = thread_state();
    if (!ts) return PyErr_NoMemory();
    ts->is_main = 1;
    ts->ctx = root;
    ts->has_ctx = 1;
    /* CUPTI numbers correlation ids afresh after cuptiFinalize: a previous session's last id, left
       in a thread's state, would make that thread drop the new session's launch with the same id
       as a "nested driver call". No callback runs now (not subscribed), so resetting is safe. */
    pthread_mutex_lock(&g_mu);
    for (ThreadState *t = g_threads; t; t = t->next) t->last_corr = NO_CORR;
    pthread_mutex_unlock(&g_mu);
    CUptiResult r;
    SubscriberHandle sub = NULL;
    Py_BEGIN_ALLOW_THREADS r = cupti.subscribe(&sub, on_callback, NULL);
    Py_END_ALLOW_THREADS if (r != 0) return cupti_error("cuptiSubscribe", r);
    g_subscriber = sub;
    const char *step = "cuptiEnableCallback";
    r = 0;
    if (apis & 1) {
        r = enable_list(DOMAIN_DRIVER, DRIVER_LAUNCH, 6);
        if (!r) r = enable_list(DOMAIN_DRIVER, DRIVER_GRAPH, 2);
    }
    if (!r && (apis & 2)) {
        r = enable_list(DOMAIN_RUNTIME, RUNTIME_LAUNCH, 6);
        if (!r) r = enable_list(DOMAIN_RUNTIME, RUNTIME_GRAPH, 2);
    }
    if (!r && (apis & 4)) {
        r = cupti.enable_callback(1, sub, DOMAIN_RESOURCE, RES_GRAPHNODE_CREATED);
        if (!r) r = cupti.enable_callback(1, sub, DOMAIN_RESOURCE, RES_GRAPHNODE_CLONED);
    }
    if (!r) {
        step = "cuptiActivityRegisterCallbacks";
        r = cupti.register_callbacks(on_buffer_requested, on_buffer_completed);
    }
    if (!r) {
        step = "cuptiActivityEnable(CONCURRENT_KERNEL)";
        r = cupti.activity_enable(ACT_CONCURRENT_KERNEL);
    }
    if (r) {
        cupti.unsubscribe(sub);
        g_subscriber = NULL;
        return cupti_error(step, r);
    }
    atomic_store(&g_paused, 0);
    atomic_store(&g_on, 1);
    Py_RETURN_NONE;
}

static PyObject *py_flush(PyObject *self, PyObject *arg) {
    (void)self;
    int forced = PyObject_IsTrue(arg);
    if (!g_cupti_handle) Py_RETURN_NONE;
    CUptiResult r;
    Py_BEGIN_ALLOW_THREADS r = cupti.flush_all(forced ? FLUSH_FORCED : 0);
    Py_END_ALLOW_THREADS if (r != 0) return cupti_error("cuptiActivityFlushAll", r);
    Py_RETURN_NONE;
}

static PyObject *py_stop(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    if (!g_subscriber) Py_RETURN_NONE;
    atomic_store(&g_on, 0);
    CUptiResult r1, r2, r3;
    SubscriberHandle sub = g_subscriber;
    Py_BEGIN_ALLOW_THREADS r1 = cupti.flush_all(FLUSH_FORCED);
    r2 = cupti.activity_disable(ACT_CONCURRENT_KERNEL);
    r3 = cupti.unsubscribe(sub);
    /* Let another CUPTI client (torch.profiler, a later session) start cleanly after us. */
    cupti.finalize();
    Py_END_ALLOW_THREADS g_subscriber = NULL;
    if (r1) return cupti_error("cuptiActivityFlushAll", r1);
    if (r2) return cupti_error("cuptiActivityDisable", r2);
    if (r3) return cupti_error("cuptiUnsubscribe", r3);
    Py_RETURN_NONE;
}

static PyObject *py_set_context(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_context(ctx, state)");
        return NULL;
    }
    unsigned long long ctx = PyLong_AsUnsignedLongLong(args[0]);
    unsigned long state = PyLong_AsUnsignedLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    ThreadState *ts = thread_state();
    if (!ts) return PyErr_NoMemory();
    ts->ctx = ctx;
    ts->state = (uint32_t)state;
    ts->has_ctx = 1;
    if (ts->is_main) atomic_store_explicit(&g_main_ctx, ctx, memory_order_relaxed);
    Py_RETURN_NONE;
}

static PyObject *py_set_op_probe(PyObject *self, PyObject *arg) {
    (void)self;
    unsigned long long address = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) return NULL;
    g_op_probe = (uint32_t(*)(const char *, int))(uintptr_t)address;
    Py_RETURN_NONE;
}

static PyObject *py_set_native(PyObject *self, PyObject *arg) {
    (void)self;
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
    atomic_store(&g_native, on);
    Py_RETURN_NONE;
}

static PyObject *py_native_paths(PyObject *self, PyObject *arg) {
    (void)self;
    long first = PyLong_AsLong(arg);
    if (first == -1 && PyErr_Occurred()) return NULL;
    if (first < 1) first = 1;
    pthread_mutex_lock(&g_nmu);
    uint32_t count = g_npaths;
    PyObject *out = PyList_New(0);
    for (uint32_t id = (uint32_t)first; out && id <= count; id++) {
        uint32_t a = g_nstart[id - 1], b = g_nstart[id];
        PyObject *path = PyTuple_New((Py_ssize_t)(b - a));
        if (!path) {
            Py_CLEAR(out);
            break;
        }
        for (uint32_t i = a; i < b; i++) PyTuple_SET_ITEM(path, (Py_ssize_t)(i - a), PyLong_FromSize_t(g_npool[i]));
        if (PyList_Append(out, path) < 0) Py_CLEAR(out);
        Py_DECREF(path);
    }
    pthread_mutex_unlock(&g_nmu);
    return out;
}

static PyObject *py_native_probe(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return PyLong_FromVoidPtr((void *)&deuteron_native_here);
}

static PyObject *py_set_pending(PyObject *self, PyObject *arg) {
    (void)self;
    unsigned long meta = PyLong_AsUnsignedLong(arg);
    if (PyErr_Occurred()) return NULL;
    ThreadState *ts = thread_state();
    if (!ts) return PyErr_NoMemory();
    ts->pending_meta = (uint32_t)meta;
    Py_RETURN_NONE;
}

static PyObject *py_set_paused(PyObject *self, PyObject *arg) {
    (void)self;
    atomic_store(&g_paused, PyObject_IsTrue(arg));
    Py_RETURN_NONE;
}

static PyObject *py_timestamp(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    if (!g_cupti_handle) {
        PyErr_SetString(PyExc_RuntimeError, "libcupti is not loaded");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(now_ts());
}

static PyObject *py_pending(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    pthread_mutex_lock(&g_kmu);
    size_t kernels = g_kernels_len;
    pthread_mutex_unlock(&g_kmu);
    return Py_BuildValue("(nn)", (Py_ssize_t)kernels, (Py_ssize_t)atomic_load(&g_full_entries));
}

/* Everything recorded since the last drain: (entries, kernels, threads, paths, counters). */
static PyObject *py_drain(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    /* kernels */
    uint8_t *kbuf;
    size_t klen;
    uint64_t dropped, lost_kernels, buffers, other;
    pthread_mutex_lock(&g_kmu);
    kbuf = g_kernels;
    klen = g_kernels_len;
    g_kernels = NULL;
    g_kernels_len = g_kernels_cap = 0;
    dropped = g_dropped;
    lost_kernels = g_lost_kernels;
    buffers = g_buffers;
    other = g_other_records;
    pthread_mutex_unlock(&g_kmu);
    PyObject *kernels = PyBytes_FromStringAndSize((const char *)kbuf, (Py_ssize_t)(klen * KERNEL_RECORD_BYTES));
    free(kbuf);
    if (!kernels) return NULL;

    /* launch entries: full chunks, then what each thread's current chunk holds */
    PyObject *threads = PyList_New(0);
    if (!threads) {
        Py_DECREF(kernels);
        return NULL;
    }
    pthread_mutex_lock(&g_mu);
    size_t total = 0;
    for (Chunk *c = g_full_head; c; c = c->next) total += CHUNK_CAP - c->read;
    for (ThreadState *ts = g_threads; ts; ts = ts->next)
        total += atomic_load_explicit(&ts->cur->n, memory_order_acquire) - ts->cur->read;
    PyObject *entries = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * sizeof(Entry)));
    if (entries) {
        char *out = PyBytes_AS_STRING(entries);
        size_t at = 0;
        Chunk *c = g_full_head;
        while (c) {
            Chunk *next = c->next;
            memcpy(out + at * sizeof(Entry), &c->e[c->read], (CHUNK_CAP - c->read) * sizeof(Entry));
            at += CHUNK_CAP - c->read;
            free(c);
            c = next;
        }
        g_full_head = g_full_tail = NULL;
        atomic_store(&g_full_entries, 0);
        for (ThreadState *ts = g_threads; ts; ts = ts->next) {
            size_t n = atomic_load_explicit(&ts->cur->n, memory_order_acquire);
            memcpy(out + at * sizeof(Entry), &ts->cur->e[ts->cur->read], (n - ts->cur->read) * sizeof(Entry));
            at += n - ts->cur->read;
            ts->cur->read = n;
            if (!ts->reported) {
                PyObject *item = Py_BuildValue("(ik)", (int)ts->index, ts->ident);
                if (item && PyList_Append(threads, item) == 0) ts->reported = 1;
                Py_XDECREF(item);
            }
        }
    }
    pthread_mutex_unlock(&g_mu);
    if (!entries) {
        Py_DECREF(kernels);
        Py_DECREF(threads);
        return NULL;
    }

    /* new Python call paths: (id, ((code, line), ...)) innermost first */
    PyObject *paths = PyList_New(0);
    for (size_t i = 0; paths && i < g_new_len; i++) {
        NewPath *np = &g_new_paths[i];
        PyObject *frames = PyTuple_New(np->depth);
        for (uint32_t k = 0; frames && k < np->depth; k++) {
            PyObject *pair = Py_BuildValue("(Oi)", np->codes[k], np->lines[k]);
            if (!pair) {
                Py_CLEAR(frames);
                break;
            }
            PyTuple_SET_ITEM(frames, k, pair);
        }
        PyObject *item = frames ? Py_BuildValue("(IN)", np->id, frames) : NULL;
        if (!item || PyList_Append(paths, item) < 0) Py_CLEAR(paths);
        Py_XDECREF(item);
    }
    for (size_t i = 0; i < g_new_len; i++) { /* the path table keeps its own references */
        free(g_new_paths[i].codes);
        free(g_new_paths[i].lines);
    }
    g_new_len = 0;
    if (!paths) {
        Py_DECREF(kernels);
        Py_DECREF(threads);
        Py_DECREF(entries);
        return NULL;
    }
    PyObject *counters = Py_BuildValue("{sKsKsKsKsK}", "dropped", (unsigned long long)dropped, "lost_kernels",
                                       (unsigned long long)lost_kernels, "buffers", (unsigned long long)buffers,
                                       "other_records", (unsigned long long)other, "lost_launches",
                                       (unsigned long long)atomic_load(&g_lost_entries));
    return Py_BuildValue("(NNNNN)", entries, kernels, threads, paths, counters);
}

static PyObject *py_synchronize(PyObject *self, PyObject *args) {
    (void)self;
    (void)args;
    if (load_cuda() != NULL) Py_RETURN_NONE;
    int n = 0, failures = 0;
    Py_BEGIN_ALLOW_THREADS if (cuda.device_get_count(&n) != 0) n = 0;
    for (int i = 0; i < n; i++) {
        int dev = 0, active = 0;
        unsigned flags = 0;
        CUcontext ctx = NULL, popped = NULL;
        if (cuda.device_get(&dev, i) != 0) continue;
        if (cuda.primary_ctx_get_state(dev, &flags, &active) != 0 || !active) continue;
        if (cuda.primary_ctx_retain(&ctx, dev) != 0) continue;
        if (cuda.ctx_push(ctx) == 0) {
            if (cuda.ctx_synchronize() != 0) failures++;
            cuda.ctx_pop(&popped);
        }
        cuda.primary_ctx_release(dev);
    }
    Py_END_ALLOW_THREADS return PyLong_FromLong(failures);
}

static PyObject *py_device_info(PyObject *self, PyObject *arg) {
    (void)self;
    long ordinal = PyLong_AsLong(arg);
    if (PyErr_Occurred()) return NULL;
    const char *why = load_cuda();
    if (why) {
        PyErr_SetString(PyExc_OSError, why);
        return NULL;
    }
    int dev = 0;
    if (cuda.device_get(&dev, (int)ordinal) != 0) {
        PyErr_Format(PyExc_OSError, "no CUDA device %ld", ordinal);
        return NULL;
    }
    static const int attrs[] = {75, 76, 16, 13, 36, 37}; /* cc major, minor, SMs, clock, mem clock, bus */
    int v[6] = {0};
    for (int i = 0; i < 6; i++) cuda.device_get_attribute(&v[i], attrs[i], dev);
    char name[256] = {0};
    cuda.device_get_name(name, (int)sizeof(name) - 1, dev);
    return Py_BuildValue("{sisisisisisiss}", "cc_major", v[0], "cc_minor", v[1], "num_sms", v[2],
                         "clock_rate", v[3], "memory_clock_rate", v[4], "bus_width", v[5], "name", name);
}

static PyMethodDef methods[] = {
    {"cuda_devices", py_cuda_devices, METH_NOARGS, "Number of CUDA devices, or why there are none (a str)."},
    {"load", py_load, METH_O, "dlopen libcupti at this path and resolve the functions used."},
    {"start", py_start, METH_VARARGS, "Subscribe and start recording: start(mode, root_ctx, apis)."},
    {"stop", py_stop, METH_NOARGS, "Flush, disable and unsubscribe; recorded data stays for drain()."},
    {"flush", py_flush, METH_O, "cuptiActivityFlushAll; forced when the argument is true."},
    {"drain", py_drain, METH_NOARGS, "Hand over everything recorded since the last drain."},
    {"pending", py_pending, METH_NOARGS, "(kernel records queued, launch entries in full chunks)."},
    {"set_context", (PyCFunction)(void (*)(void))py_set_context, METH_FASTCALL,
     "This thread's context id and state id for the launches it makes from now on."},
    {"set_pending", py_set_pending, METH_O, "Launch metadata id for this thread's next launch."},
    {"set_op_probe", py_set_op_probe, METH_O, "Address of uint32_t probe(const char *kernel, int is_launch) asked at each launch (0: none)."},
    {"set_paused", py_set_paused, METH_O, "Mark launches as made while the session is deactivated."},
    {"set_native", py_set_native, METH_O, "Keep the native call path of each launch (-c native) or not."},
    {"native_paths", py_native_paths, METH_O, "Native paths from id N on: tuples of return addresses, innermost first."},
    {"native_probe", py_native_probe, METH_NOARGS, "Address of uint32_t deuteron_native_here(void) (tests)."},
    {"timestamp", py_timestamp, METH_NOARGS, "CUPTI's clock, in ns."},
    {"synchronize", py_synchronize, METH_NOARGS, "Synchronise every active device; returns failures."},
    {"device_info", py_device_info, METH_O, "Facts about CUDA device N for the device table."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_shim", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__shim(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    ShimError = PyErr_NewException("deuteron.backends.cupti._shim.CuptiError", PyExc_RuntimeError, NULL);
    if (!ShimError || PyModule_AddObject(m, "CuptiError", ShimError) < 0) return NULL;
    Py_INCREF(ShimError);
    PyModule_AddIntConstant(m, "KERNEL_RECORD_BYTES", KERNEL_RECORD_BYTES);
    PyModule_AddIntConstant(m, "ENTRY_BYTES", (long)sizeof(Entry));
    PyModule_AddIntConstant(m, "NATIVE_PLACE", (long)NATIVE_PLACE);
    return m;
}
