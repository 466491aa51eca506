/* The physical floor of kernel tracing: a bare CUPTI activity collector, for benchmarks/overhead.py.
 *
 * It enables CUPTI's concurrent-kernel activity records and nothing else: no launch callbacks,
 * no contexts, no Python per record. Buffers are counted and freed on CUPTI's thread. Whatever a
 * profiler costs beyond this is its own doing; this is what tracing every kernel costs at all.
 * Built by overhead.py with the system C compiler; libcupti is opened at run time (dlopen).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef int CUptiResult;
typedef void *CUcontext;
typedef void (*Request)(uint8_t **, size_t *, size_t *);
typedef void (*Complete)(CUcontext, uint32_t, uint8_t *, size_t, size_t);

enum { KIND_CONCURRENT_KERNEL = 10, FLUSH_FORCED = 1, BUFFER_BYTES = 8 << 20 };

static CUptiResult (*enable)(int);
static CUptiResult (*disable)(int);
static CUptiResult (*register_callbacks)(Request, Complete);
static CUptiResult (*next_record)(uint8_t *, size_t, void **);
static CUptiResult (*flush_all)(uint32_t);
static uint64_t g_records;

static void on_request(uint8_t **buffer, size_t *size, size_t *max_records) {
    *size = BUFFER_BYTES;
    *buffer = (uint8_t *)aligned_alloc(8, BUFFER_BYTES);
    *max_records = 0;
}

static void on_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)ctx, (void)stream, (void)size;
    void *record = NULL;
    uint64_t n = 0;
    while (next_record(buffer, valid, &record) == 0) n++;
    __atomic_add_fetch(&g_records, n, __ATOMIC_RELAXED);
    free(buffer);
}

/* 0 on success; -1: libcupti could not be opened; -2: a symbol is missing; else CUPTI's error. */
int floor_start(const char *libcupti) {
    void *h = dlopen(libcupti, RTLD_NOW | RTLD_GLOBAL);
    if (!h) return -1;
    enable = (CUptiResult(*)(int))dlsym(h, "cuptiActivityEnable");
    disable = (CUptiResult(*)(int))dlsym(h, "cuptiActivityDisable");
    register_callbacks = (CUptiResult(*)(Request, Complete))dlsym(h, "cuptiActivityRegisterCallbacks");
    next_record = (CUptiResult(*)(uint8_t *, size_t, void **))dlsym(h, "cuptiActivityGetNextRecord");
    flush_all = (CUptiResult(*)(uint32_t))dlsym(h, "cuptiActivityFlushAll");
    if (!enable || !disable || !register_callbacks || !next_record || !flush_all) return -2;
    CUptiResult r = register_callbacks(on_request, on_complete);
    return r ? r : enable(KIND_CONCURRENT_KERNEL);
}

/* Flush, stop, and say how many kernel records arrived. */
uint64_t floor_stop(void) {
    flush_all(FLUSH_FORCED);
    disable(KIND_CONCURRENT_KERNEL);
    flush_all(FLUSH_FORCED);
    return __atomic_load_n(&g_records, __ATOMIC_RELAXED);
}
