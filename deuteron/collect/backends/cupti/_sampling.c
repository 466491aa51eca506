/*
 * Deuteron's PC sampling shim: CUPTI's PC Sampling API (cupti_pcsampling.h), for `--sample`.
 *
 * Why a second extension beside _shim.c: sampling is a different CUPTI API with its own state
 * (per-context configuration and a record buffer CUPTI writes into), used by one mode only;
 * keeping it apart keeps the launch hot path in _shim.c untouched. It opens the same libcupti
 * the CUPTI backend loaded (dlopen returns the same handle), and libcuda for the current context.
 *
 * Mode: continuous collection (CUPTI_PC_SAMPLING_COLLECTION_MODE_CONTINUOUS), one range from
 * enable to disable: kernels are not serialised and nothing synchronises the device per launch,
 * unlike Proton, which stops and starts a range (and synchronises) around every launch. `drain`
 * copies what CUPTI's worker threads decoded so far (cuptiPCSamplingGetData never synchronises),
 * per PC and stall reason, into one flat byte string that Python reads with numpy; the final
 * drain disables sampling, which hands over the rest. Start/stop ranges (`ranges`) are kept as an
 * option but off: measured on an H200 with CUDA 13 (2026-11-26), continuous mode with start/stop
 * control on delivered no sample at all, with or without a current context at enable.
 *
 * No CUDA headers are needed to build this: the structures below are declared as CUPTI's public
 * header declares them (packed, 8-byte aligned, `size` first for versioning). CUPTI 12.4 added a
 * correlationId after the stall-reason pointer of each PC record, so the record stride is chosen
 * from cuptiGetVersion at run time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUptiResult;
typedef void *CUcontext;

#define PACKED __attribute__((__packed__)) __attribute__((aligned(8)))

typedef struct PACKED {
    uint32_t index;
    uint32_t samples;
} StallReason; /* CUpti_PCSamplingStallReason */

typedef struct PACKED {
    size_t size;
    uint64_t cubinCrc;
    uint64_t pcOffset;
    uint32_t functionIndex;
    uint32_t pad;
    char *functionName;
    size_t stallReasonCount;
    StallReason *stallReason;
    uint32_t correlationId; /* CUPTI >= 12.4 only: absent from older records */
} PCData;                   /* CUpti_PCSamplingPCData */

typedef struct PACKED {
    size_t size;
    size_t collectNumPcs;
    uint64_t totalSamples;
    uint64_t droppedSamples;
    size_t totalNumPcs;
    size_t remainingNumPcs;
    uint64_t rangeId;
    PCData *pPcData;
    uint64_t nonUsrKernelsTotalSamples;
    uint8_t hardwareBufferFull;
} SamplingData; /* CUpti_PCSamplingData */

typedef struct {
    int attributeType;
    CUptiResult attributeStatus;
    union {
        uint64_t invalid[3];
        uint32_t u32;
        size_t size;
        struct {
            size_t count;
            uint32_t *indices;
        } stall;
        void *pointer;
    } data;
} ConfigInfo; /* CUpti_PCSamplingConfigurationInfo */

typedef struct {
    size_t size;
    void *pPriv;
    CUcontext ctx;
    size_t numAttributes;
    ConfigInfo *info;
} ConfigParams;

typedef struct {
    size_t size;
    void *pPriv;
    CUcontext ctx;
} CtxParams; /* Enable, Disable, Start, Stop */

typedef struct {
    size_t size;
    void *pPriv;
    CUcontext ctx;
    void *data;
} GetDataParams;

typedef struct {
    size_t size;
    void *pPriv;
    CUcontext ctx;
    size_t *count;
} NumStallParams;

typedef struct {
    size_t size;
    void *pPriv;
    CUcontext ctx;
    size_t count;
    uint32_t *indices;
    char **names;
} StallParams;

typedef struct {
    size_t size;
    size_t cubinSize;
    const void *cubin;
    uint64_t cubinCrc;
} CrcParams;

_Static_assert(sizeof(StallReason) == 8, "CUpti_PCSamplingStallReason layout");
_Static_assert(offsetof(PCData, correlationId) == 56, "CUpti_PCSamplingPCData layout");
_Static_assert(offsetof(SamplingData, hardwareBufferFull) == 72, "CUpti_PCSamplingData layout");
_Static_assert(offsetof(ConfigInfo, data) == 8 && sizeof(ConfigInfo) == 32, "ConfigurationInfo layout");

enum {
    ATTR_PERIOD = 1,
    ATTR_STALL_REASON = 2,
    ATTR_SCRATCH = 3,
    ATTR_HW_BUFFER = 4,
    ATTR_COLLECTION = 5,
    ATTR_START_STOP = 6,
    ATTR_FORMAT = 7,
    ATTR_DATA_BUFFER = 8,
};
enum { COLLECTION_CONTINUOUS = 1, FORMAT_PARSED = 1 };
#define STALL_NAME_BYTES 128
#define CUPTI_12_4 22 /* cuptiGetVersion of CUDA 12.4, whose PC records carry a correlation id */
#define OUT_OF_MEMORY 13 /* CUPTI_ERROR_OUT_OF_MEMORY: the hardware buffer filled */

static struct {
    CUptiResult (*enable)(CtxParams *);
    CUptiResult (*disable)(CtxParams *);
    CUptiResult (*start)(CtxParams *);
    CUptiResult (*stop)(CtxParams *);
    CUptiResult (*set_config)(ConfigParams *);
    CUptiResult (*get_data)(GetDataParams *);
    CUptiResult (*num_stalls)(NumStallParams *);
    CUptiResult (*stalls)(StallParams *);
    CUptiResult (*crc)(CrcParams *);
    CUptiResult (*version)(uint32_t *);
    CUptiResult (*result_string)(CUptiResult, const char **);
    int (*ctx_get_current)(CUcontext *);
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*primary_ctx_retain)(CUcontext *, int);
} api;

static int g_loaded;
static int g_ranges; /* start/stop control: one range per drain (off, see the top of the file) */
static size_t g_stride = sizeof(PCData) - sizeof(uint32_t); /* 56 before CUPTI 12.4 */
static int g_has_correlation;

/* One sampled context: its configuration and the buffer CUPTI writes PC records into. */
typedef struct {
    CUcontext ctx;
    size_t nstalls;
    uint32_t *indices;
    char **names;
    SamplingData data;
    unsigned char *records; /* capacity PC records, g_stride bytes each */
    StallReason *reasons;   /* capacity x nstalls */
    size_t capacity;
    uint64_t total, dropped, non_user, buffer_full, calls;
} Sampled;

#define MAX_CONTEXTS 16
static Sampled g_ctx[MAX_CONTEXTS];
static int g_nctx;

static PyObject *SamplingError;

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static PyObject *fail(const char *what, CUptiResult r) {
    const char *text = NULL;
    if (!api.result_string || api.result_string(r, &text) != 0 || !text) text = "unknown CUPTI error";
    PyErr_Format(SamplingError, "%s failed: %s (CUPTI error %d)", what, text, (int)r);
    return NULL;
}

static PyObject *py_load(PyObject *self, PyObject *arg) {
    (void)self;
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path) return NULL;
    if (g_loaded) Py_RETURN_TRUE;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!h || !cuda) {
        const char *err = dlerror();
        PyErr_Format(PyExc_OSError, "%s", err ? err : path);
        return NULL;
    }
#define SYM(handle, field, name)                                                     \
    *(void **)(&api.field) = dlsym(handle, name);                                    \
    if (!api.field) {                                                                \
        PyErr_Format(PyExc_OSError, "%s lacks %s (PC sampling needs CUDA 11.3 or newer)", \
                     path, name);                                                    \
        return NULL;                                                                 \
    }
    SYM(h, enable, "cuptiPCSamplingEnable");
    SYM(h, disable, "cuptiPCSamplingDisable");
    SYM(h, start, "cuptiPCSamplingStart");
    SYM(h, stop, "cuptiPCSamplingStop");
    SYM(h, set_config, "cuptiPCSamplingSetConfigurationAttribute");
    SYM(h, get_data, "cuptiPCSamplingGetData");
    SYM(h, num_stalls, "cuptiPCSamplingGetNumStallReasons");
    SYM(h, stalls, "cuptiPCSamplingGetStallReasons");
    SYM(h, crc, "cuptiGetCubinCrc");
    SYM(h, version, "cuptiGetVersion");
    SYM(h, result_string, "cuptiGetResultString");
    SYM(cuda, ctx_get_current, "cuCtxGetCurrent");
    SYM(cuda, init, "cuInit");
    SYM(cuda, device_get, "cuDeviceGet");
    SYM(cuda, primary_ctx_retain, "cuDevicePrimaryCtxRetain");
#undef SYM
    uint32_t version = 0;
    if (api.version(&version) == 0 && version >= CUPTI_12_4) {
        g_stride = sizeof(PCData);
        g_has_correlation = 1;
    }
    g_loaded = 1;
    return PyLong_FromUnsignedLong(version);
}

static Sampled *find(CUcontext ctx) {
    for (int i = 0; i < g_nctx; i++)
        if (g_ctx[i].ctx == ctx) return &g_ctx[i];
    return NULL;
}

static void release(Sampled *s) {
    if (s->names)
        for (size_t i = 0; i < s->nstalls; i++) free(s->names[i]);
    free(s->names);
    free(s->indices);
    free(s->records);
    free(s->reasons);
    memset(s, 0, sizeof(*s));
}

static PCData *record_at(Sampled *s, size_t i) { return (PCData *)(s->records + i * g_stride); }

static int reset_records(Sampled *s) {
    memset(s->records, 0, s->capacity * g_stride);
    for (size_t i = 0; i < s->capacity; i++) {
        PCData *pc = record_at(s, i);
        pc->size = g_stride;
        pc->stallReason = s->reasons + i * s->nstalls;
    }
    memset(&s->data, 0, sizeof(s->data));
    s->data.size = sizeof(SamplingData);
    s->data.collectNumPcs = s->capacity;
    s->data.pPcData = (PCData *)s->records;
    return 0;
}

/* enable(period_exponent, capacity, hardware_bytes, scratch_bytes, device) on the calling
   thread's current context, or else on `device`'s primary context (the one the CUDA runtime,
   torch and Triton use; retained here, so it exists before the program's first CUDA call);
   returns the context's address. period_exponent 0 keeps CUPTI's default. */
static PyObject *py_enable(PyObject *self, PyObject *args) {
    (void)self;
    unsigned period = 0;
    Py_ssize_t capacity = 0, hw_bytes = 0, scratch_bytes = 0;
    int device = 0, ranges = 0;
    if (!PyArg_ParseTuple(args, "Innni|p", &period, &capacity, &hw_bytes, &scratch_bytes, &device, &ranges))
        return NULL;
    if (!g_loaded) {
        PyErr_SetString(PyExc_RuntimeError, "libcupti is not loaded for sampling");
        return NULL;
    }
    CUcontext ctx = NULL;
    if (api.ctx_get_current(&ctx) != 0 || !ctx) {
        int dev = 0, r = api.init(0);
        if (!r) r = api.device_get(&dev, device);
        if (!r) r = api.primary_ctx_retain(&ctx, dev);
        if (r || !ctx) {
            PyErr_Format(SamplingError, "no CUDA context to sample on device %d (CUDA error %d)", device, r);
            return NULL;
        }
    }
    if (find(ctx)) return PyLong_FromVoidPtr(ctx);
    if (g_nctx == MAX_CONTEXTS) {
        PyErr_SetString(SamplingError, "PC sampling follows at most 16 CUDA contexts");
        return NULL;
    }
    Sampled *s = &g_ctx[g_nctx];
    memset(s, 0, sizeof(*s));
    s->ctx = ctx;
    CUptiResult r;
    CtxParams cp = {sizeof(CtxParams), NULL, ctx};
    Py_BEGIN_ALLOW_THREADS r = api.enable(&cp);
    Py_END_ALLOW_THREADS if (r != 0) return fail("cuptiPCSamplingEnable", r);
    NumStallParams np = {sizeof(NumStallParams), NULL, ctx, &s->nstalls};
    if ((r = api.num_stalls(&np)) != 0) goto failed;
    s->indices = calloc(s->nstalls, sizeof(uint32_t));
    s->names = calloc(s->nstalls, sizeof(char *));
    s->capacity = (size_t)capacity;
    s->records = calloc(s->capacity, g_stride);
    s->reasons = calloc(s->capacity * (s->nstalls ? s->nstalls : 1), sizeof(StallReason));
    if (!s->indices || !s->names || !s->records || !s->reasons) goto nomem;
    for (size_t i = 0; i < s->nstalls; i++)
        if (!(s->names[i] = calloc(STALL_NAME_BYTES, 1))) goto nomem;
    StallParams sp = {sizeof(StallParams), NULL, ctx, s->nstalls, s->indices, s->names};
    if ((r = api.stalls(&sp)) != 0) goto failed;
    reset_records(s);
    ConfigInfo info[8];
    memset(info, 0, sizeof(info));
    int n = 0;
    info[n].attributeType = ATTR_STALL_REASON;
    info[n].data.stall.count = s->nstalls;
    info[n++].data.stall.indices = s->indices;
    if (period) {
        info[n].attributeType = ATTR_PERIOD;
        info[n++].data.u32 = period;
    }
    if (scratch_bytes > 0) {
        info[n].attributeType = ATTR_SCRATCH;
        info[n++].data.size = (size_t)scratch_bytes;
    }
    if (hw_bytes > 0) {
        info[n].attributeType = ATTR_HW_BUFFER;
        info[n++].data.size = (size_t)hw_bytes;
    }
    info[n].attributeType = ATTR_DATA_BUFFER;
    info[n++].data.pointer = &s->data;
    info[n].attributeType = ATTR_START_STOP;
    info[n++].data.u32 = ranges ? 1 : 0;
    info[n].attributeType = ATTR_COLLECTION;
    info[n++].data.u32 = COLLECTION_CONTINUOUS;
    info[n].attributeType = ATTR_FORMAT;
    info[n++].data.u32 = FORMAT_PARSED;
    ConfigParams params = {sizeof(ConfigParams), NULL, ctx, (size_t)n, info};
    if ((r = api.set_config(&params)) != 0) {
        for (int i = 0; i < n; i++)
            if (info[i].attributeStatus != 0) {
                static const char *names[] = {"", "sampling period", "stall reasons", "scratch buffer size",
                                              "hardware buffer size", "collection mode", "start/stop control",
                                              "output format", "data buffer"};
                PyErr_Format(SamplingError, "CUPTI refused the PC sampling %s (CUPTI error %d)",
                             names[info[i].attributeType], (int)info[i].attributeStatus);
                api.disable(&cp);
                release(s);
                return NULL;
            }
        goto failed;
    }
    if (ranges) {
        Py_BEGIN_ALLOW_THREADS r = api.start(&cp);
        Py_END_ALLOW_THREADS if (r != 0) goto failed;
    }
    g_ranges = ranges;
    g_nctx++;
    return PyLong_FromVoidPtr(ctx);
nomem:
    api.disable(&cp);
    release(s);
    return PyErr_NoMemory();
failed:
    api.disable(&cp);
    release(s);
    return fail("configuring PC sampling", r);
}

/* The stall reasons of the first sampled context: [(index, name)]. */
static PyObject *py_stall_reasons(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    PyObject *out = PyList_New(0);
    if (!out || !g_nctx) return out;
    Sampled *s = &g_ctx[0];
    for (size_t i = 0; i < s->nstalls; i++) {
        PyObject *item = Py_BuildValue("(Is)", s->indices[i], s->names[i]);
        if (!item || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}

/* One output row per (PC, stall reason): read by sampling.py as a numpy structured array. */
typedef struct {
    uint64_t crc;
    uint64_t pc;
    uint32_t function_index;
    uint32_t correlation;
    uint32_t name;   /* index into the names list handed out with the rows */
    uint32_t stall;  /* CUPTI's stall reason index */
    uint32_t samples;
    uint32_t context; /* which sampled context (0..15) */
} Row;
_Static_assert(sizeof(Row) == 40, "Row layout is read by sampling.py");

typedef struct {
    Row *rows;
    size_t n, cap;
    PyObject *names; /* dict: name -> index */
    PyObject *order; /* list of names in index order */
} Out;

static int out_add(Out *o, Sampled *s, int context) {
    for (size_t i = 0; i < s->data.totalNumPcs && i < s->capacity; i++) {
        PCData *pc = record_at(s, i);
        const char *fname = pc->functionName ? pc->functionName : "";
        PyObject *key = PyUnicode_DecodeUTF8(fname, (Py_ssize_t)strlen(fname), "replace");
        if (!key) return -1;
        PyObject *idx = PyDict_GetItemWithError(o->names, key);
        uint32_t name;
        if (idx) {
            name = (uint32_t)PyLong_AsUnsignedLong(idx);
        } else {
            if (PyErr_Occurred()) {
                Py_DECREF(key);
                return -1;
            }
            name = (uint32_t)PyList_GET_SIZE(o->order);
            PyObject *num = PyLong_FromUnsignedLong(name);
            int bad = !num || PyDict_SetItem(o->names, key, num) < 0 || PyList_Append(o->order, key) < 0;
            Py_XDECREF(num);
            if (bad) {
                Py_DECREF(key);
                return -1;
            }
        }
        Py_DECREF(key);
        /* CUPTI allocates each function name with malloc and leaves freeing it to us; the same
           pointer may be shared by several records, so it is not freed here (a few bytes per
           kernel, once per drain; CUPTI's own samples do the same). */
        for (size_t j = 0; j < pc->stallReasonCount && j < s->nstalls; j++) {
            if (!pc->stallReason[j].samples) continue;
            if (o->n == o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 1024;
                Row *grown = realloc(o->rows, cap * sizeof(Row));
                if (!grown) {
                    PyErr_NoMemory();
                    return -1;
                }
                o->rows = grown;
                o->cap = cap;
            }
            Row *row = &o->rows[o->n++];
            row->crc = pc->cubinCrc;
            row->pc = pc->pcOffset;
            row->function_index = pc->functionIndex;
            row->correlation = g_has_correlation ? pc->correlationId : 0;
            row->name = name;
            row->stall = pc->stallReason[j].index;
            row->samples = pc->stallReason[j].samples;
            row->context = (uint32_t)context;
        }
    }
    s->total += s->data.totalSamples;
    s->dropped += s->data.droppedSamples;
    s->non_user += s->data.nonUsrKernelsTotalSamples;
    s->buffer_full += s->data.hardwareBufferFull ? 1 : 0;
    return 0;
}

/* With ranges, stops or starts a context's range again (`call` is api.stop or api.start), without
   the GIL; -1 with the error raised when CUPTI refuses. Without ranges there is nothing to do. */
static int range_call(CUptiResult (*call)(CtxParams *), CtxParams *cp, const char *what) {
    if (!g_ranges) return 0;
    CUptiResult r;
    Py_BEGIN_ALLOW_THREADS r = call(cp);
    Py_END_ALLOW_THREADS if (r != 0) {
        fail(what, r);
        return -1;
    }
    return 0;
}

/* Everything CUPTI decoded since the last drain, in every sampled context (with ranges, the range
   is stopped, read and started again); with final=True the context is then disabled (CUPTI
   copies its last records into the buffer) and forgotten. Returns (rows bytes, function names, counters). */
static PyObject *py_drain(PyObject *self, PyObject *arg) {
    (void)self;
    int final = PyObject_IsTrue(arg);
    if (final < 0) return NULL;
    Out o = {NULL, 0, 0, PyDict_New(), PyList_New(0)};
    if (!o.names || !o.order) goto error;
    uint64_t total = 0, dropped = 0, non_user = 0, full = 0, full_errors = 0, get_ns = 0, disable_ns = 0;
    for (int c = 0; c < g_nctx; c++) {
        Sampled *s = &g_ctx[c];
        /* With ranges, ending one makes CUPTI decode what the hardware buffer holds. */
        CtxParams cp = {sizeof(CtxParams), NULL, s->ctx};
        if (range_call(api.stop, &cp, "cuptiPCSamplingStop") < 0) goto error;
        /* GetData hands at most `capacity` PCs per call; the rest wait in remainingNumPcs. */
        uint64_t began = now_ns();
        for (int round = 0; round < 1000; round++) {
            reset_records(s);
            GetDataParams gp = {sizeof(GetDataParams), NULL, s->ctx, &s->data};
            CUptiResult r;
            Py_BEGIN_ALLOW_THREADS r = api.get_data(&gp);
            Py_END_ALLOW_THREADS if (r == OUT_OF_MEMORY) full_errors++;
            else if (r != 0) {
                fail("cuptiPCSamplingGetData", r);
                goto error;
            }
            s->calls++;
            if (out_add(&o, s, c) < 0) goto error;
            if (!s->data.remainingNumPcs) break;
        }
        get_ns += now_ns() - began;
        if (!final) {
            if (range_call(api.start, &cp, "cuptiPCSamplingStart") < 0) goto error;
        } else { /* disabling copies what CUPTI still holds into the configured buffer */
            CUptiResult r;
            reset_records(s);
            began = now_ns();
            Py_BEGIN_ALLOW_THREADS r = api.disable(&cp);
            Py_END_ALLOW_THREADS if (r != 0) {
                fail("cuptiPCSamplingDisable", r);
                goto error;
            }
            disable_ns += now_ns() - began;
            if (out_add(&o, s, c) < 0) goto error;
        }
        total += s->total;
        dropped += s->dropped;
        non_user += s->non_user;
        full += s->buffer_full;
    }
    if (final) {
        for (int c = 0; c < g_nctx; c++) release(&g_ctx[c]);
        g_nctx = 0;
    }
    PyObject *rows = PyBytes_FromStringAndSize((const char *)o.rows, (Py_ssize_t)(o.n * sizeof(Row)));
    free(o.rows);
    Py_DECREF(o.names);
    if (!rows) {
        Py_DECREF(o.order);
        return NULL;
    }
    return Py_BuildValue("(NN{sKsKsKsKsKsisKsK})", rows, o.order, "total_samples", (unsigned long long)total,
                         "dropped_samples", (unsigned long long)dropped, "non_user_samples",
                         (unsigned long long)non_user, "hardware_buffer_full", (unsigned long long)full,
                         "out_of_memory", (unsigned long long)full_errors, "correlation", g_has_correlation,
                         "get_data_ns", (unsigned long long)get_ns, "disable_ns", (unsigned long long)disable_ns);
error:
    free(o.rows);
    Py_XDECREF(o.names);
    Py_XDECREF(o.order);
    return NULL;
}

static PyObject *py_cubin_crc(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (!g_loaded) {
        PyErr_SetString(PyExc_RuntimeError, "libcupti is not loaded for sampling");
        return NULL;
    }
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    CrcParams p = {sizeof(CrcParams), (size_t)view.len, view.buf, 0};
    CUptiResult r = api.crc(&p);
    PyBuffer_Release(&view);
    if (r != 0) return fail("cuptiGetCubinCrc", r);
    return PyLong_FromUnsignedLongLong(p.cubinCrc);
}

static PyObject *py_active(PyObject *self, PyObject *noargs) {
    (void)self;
    (void)noargs;
    return PyLong_FromLong(g_nctx);
}

static PyMethodDef methods[] = {
    {"load", py_load, METH_O, "Resolve the PC sampling API in this libcupti; returns cuptiGetVersion."},
    {"enable", py_enable, METH_VARARGS,
     "enable(period_exponent, capacity, hardware_bytes, scratch_bytes, device): sample a context."},
    {"stall_reasons", py_stall_reasons, METH_NOARGS, "[(CUPTI index, name)] of the stall reasons."},
    {"drain", py_drain, METH_O, "drain(final): (rows, function names, counters) since the last drain."},
    {"cubin_crc", py_cubin_crc, METH_O, "CUPTI's CRC of a cubin, as PC records name their module."},
    {"active", py_active, METH_NOARGS, "How many contexts are sampled."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sampling", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__sampling(void) {
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    SamplingError = PyErr_NewException("deuteron.collect.backends.cupti._sampling.SamplingError",
                                       PyExc_RuntimeError, NULL);
    if (!SamplingError || PyModule_AddObject(m, "SamplingError", SamplingError) < 0) return NULL;
    Py_INCREF(SamplingError);
    PyModule_AddIntConstant(m, "ROW_BYTES", (long)sizeof(Row));
    return m;
}
