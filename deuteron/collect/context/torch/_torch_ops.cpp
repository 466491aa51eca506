// PyTorch's op stream as a tree of places, from C++: the torch context's hot path.
//
// Why C++: PyTorch has no Python callback for every aten op, and the cheap ways to see ops
// from Python cost microseconds per op (a TorchDispatchMode: 2.8 us, 1.38x a training step).
// A global RecordFunction callback costs tens of nanoseconds, runs on every thread (autograd's
// too) and sees backward nodes with their forward sequence number.
//
// What it keeps:
//   - a trie of places, shared by all threads: a node is (parent, kind, name); kinds are a
//     session base (the scope or Python path the module stack started in), a module (pushed
//     by Python's wrapper of nn.Module._call_impl), an aten op, a user scope (record_function,
//     the optimizer's step), a "backward" frame and a backward node;
//   - per node: inclusive CPU time, calls and flops (from input shapes, for matmul, conv and
//     attention ops), added with relaxed atomics;
//   - per forward thread: each module call's range of autograd sequence numbers, so a
//     backward node (seq, forward thread) finds the module that created it, on any thread.
//   - with a GPU, the place each launch had at its position in its module call, backward node
//     or scope, learned until it repeats; then the op callback is disabled and launches get
//     their learned places (see "Ops inferred at launch").
// The CUPTI shim asks deut_launch() at each launch for the launching thread's node.
// Python reads nodes, names and totals in bulk (deut_read) and builds the tree itself.
// Built by deuteron/collect/context/torch_build.py against the installed torch's headers.
// Always with -DNDEBUG, as torch is: RecordFunction has a debug-only field, so without it
// the layout this file sees would not be the one torch built.

#ifdef DEUT_PYTHON  // the module-call fast path (below); Python.h goes before any standard header
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#endif

#include <ATen/SequenceNumber.h>
#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <pthread.h>

namespace {

enum Kind : uint8_t { K_BASE = 1, K_MODULE = 2, K_OP = 3, K_SCOPE = 4, K_MARK = 5, K_BACKWARD = 6 };
enum Flop : uint8_t { F_NONE, F_MM, F_ADDMM, F_BMM, F_BADDBMM, F_CONV, F_CONV_BWD, F_SDPA, F_SDPA_BWD };

constexpr uint32_t CHUNK = 4096;
constexpr uint32_t MAX_CHUNKS = 8192;  // 32M nodes, 32M names

struct NodeInfo {
  uint32_t parent;
  uint32_t name;
  uint8_t kind;
};
struct Stat {
  std::atomic<uint64_t> ns{0}, calls{0}, flops{0};
};
struct Name {
  const char* text;
  uint8_t flop;
};

std::atomic<NodeInfo*> g_info[MAX_CHUNKS];
std::atomic<Stat*> g_stat[MAX_CHUNKS];
std::atomic<Name*> g_names[MAX_CHUNKS];
std::atomic<uint32_t> g_node_count{1};  // node 0: no place
std::atomic<uint32_t> g_name_count{1};  // name 0: none
std::mutex g_mu;                        // the trie's and the names' writers
std::unordered_map<uint64_t, uint32_t> g_trie;
std::unordered_map<std::string, uint32_t> g_name_ids;
std::atomic<uint64_t> g_epoch{0};       // bumped at each install: stale per-thread stacks are reset
at::CallbackHandle g_handle = 0;
std::atomic<int> g_flops_on{1};
std::atomic<int> g_infer{0};            // ops inferred at launches (deut_install's flag 4)
std::atomic<int> g_nodes_at_launch{0};  // backward nodes read from autograd at launches (flag 8)
std::atomic<uint64_t> g_dropped{0};     // places not made (tables full)

template <typename T>
__attribute__((noinline)) T* make_chunk(std::atomic<T*>* table, uint32_t c) {
  T* chunk = new T[CHUNK]();
  T* expected = nullptr;
  if (!table[c].compare_exchange_strong(expected, chunk)) {
    delete[] chunk;
    chunk = expected;
  }
  return chunk;
}

// Inline, as every op's close reads its node's totals through it; making a chunk is out of line.
template <typename T>
inline T* chunk_of(std::atomic<T*>* table, uint32_t id, bool make) {
  uint32_t c = id / CHUNK;
  if (c >= MAX_CHUNKS) return nullptr;
  T* chunk = table[c].load(std::memory_order_acquire);
  if (!chunk && make) chunk = make_chunk(table, c);
  return chunk ? chunk + id % CHUNK : nullptr;
}

inline Stat* stat(uint32_t node) { return chunk_of(g_stat, node, false); }

uint8_t flop_kind(const char* s) {
  if (std::strncmp(s, "aten::", 6) != 0) return F_NONE;
  const char* op = s + 6;
  if (!std::strcmp(op, "mm")) return F_MM;
  if (!std::strcmp(op, "addmm")) return F_ADDMM;
  if (!std::strcmp(op, "bmm")) return F_BMM;
  if (!std::strcmp(op, "baddbmm")) return F_BADDBMM;
  if (!std::strcmp(op, "convolution")) return F_CONV;
  if (!std::strcmp(op, "convolution_backward")) return F_CONV_BWD;
  static const char* sdpa[] = {"_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
                               "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_flash_attention_for_cpu"};
  for (const char* base : sdpa) {
    size_t n = std::strlen(base);
    if (!std::strncmp(op, base, n)) {
      if (op[n] == 0) return F_SDPA;
      if (!std::strcmp(op + n, "_backward")) return F_SDPA_BWD;
    }
  }
  return F_NONE;
}

uint32_t intern_global(const char* s) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_name_ids.find(s);
  if (it != g_name_ids.end()) return it->second;
  uint32_t id = g_name_count.load(std::memory_order_relaxed);
  Name* slot = chunk_of(g_names, id, true);
  if (!slot) return 0;
  char* copy = strdup(s);
  slot->text = copy;
  slot->flop = flop_kind(copy);
  g_name_ids.emplace(copy, id);
  g_name_count.store(id + 1, std::memory_order_release);
  return id;
}

uint32_t child_global(uint64_t key, uint32_t parent, uint32_t name, uint8_t kind) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_trie.find(key);
  if (it != g_trie.end()) return it->second;
  uint32_t id = g_node_count.load(std::memory_order_relaxed);
  NodeInfo* info = chunk_of(g_info, id, true);
  Stat* st = chunk_of(g_stat, id, true);
  if (!info || !st) {
    g_dropped.fetch_add(1, std::memory_order_relaxed);
    return parent;
  }
  *info = NodeInfo{parent, name, kind};
  g_trie.emplace(key, id);
  g_node_count.store(id + 1, std::memory_order_release);
  return id;
}

struct Range {
  uint64_t s0, s1;
  uint32_t node;
  int64_t parent;  // absolute index of the enclosing module call, -1 at the top
};

struct Ranges {  // one forward thread's module calls, in the order they began (so by s0)
  std::mutex mu;
  std::vector<Range> v;
  int64_t offset = 0;  // absolute index of v[0]
  std::vector<int64_t> open;
  uint32_t base = 0;
  uint32_t last_base = 0;  // the last non-empty base: where backward work of no module goes
};

std::mutex g_rmu;
std::unordered_map<uint64_t, Ranges*> g_ranges;
std::atomic<uint32_t> g_last_base{0};  // any thread's last non-empty base (backward of unknown origin)

Ranges* ranges_for(uint64_t tid, bool make) {
  std::lock_guard<std::mutex> lock(g_rmu);
  auto it = g_ranges.find(tid);
  if (it != g_ranges.end()) return it->second;
  if (!make) return nullptr;
  Ranges* r = new Ranges();
  g_ranges.emplace(tid, r);
  return r;
}

struct Frame {
  uint32_t node;
  uint8_t timed;
  uint8_t module;   // a module call (Python's hooks), closed by deut_module_exit
  uint8_t engine;   // autograd's evaluate_function: takes the place of the node it runs
  uint8_t anchor;   // seen whether ops are observed or not: a module, a backward node, a user scope
  uint8_t launched; // an op: a kernel was launched inside this call (its call is counted then)
  uint32_t ordinal;   // an anchor: which anchor it is inside the enclosing one (see LaunchKey)
  uint32_t launches;  // launches so far with this frame as the innermost anchor
  uint32_t children;  // anchors opened directly inside this one
  uint64_t t0;
  uint8_t based = 0;  // a user scope that set the thread's base (-c python,torch): cleared when it closes
};

// Direct-mapped caches in front of each thread's maps: an op's name and place are found with one
// probe instead of two hash-map lookups (most ops repeat the name and place they had last step).
constexpr size_t NAME_SLOTS = 1024, PLACE_SLOTS = 4096;
struct NameSlot {
  const char* text;
  uint32_t id;
};
struct PlaceSlot {
  uint64_t key;
  uint32_t id;
};
// An op's place under its parent, its name's interned text and its flop kind, found with one probe
// and one comparison of the name (see op_enter): the name and place caches above take two probes,
// and the name's check a look-up of its interned text.
constexpr size_t OP_SLOTS = 4096;
struct OpSlot {
  const char* text;      // the RecordFunction's name pointer
  const char* interned;  // the same text, interned (the pointer may later hold another string)
  uint32_t parent;
  uint32_t node;
  uint8_t flop;
};

// The autograd node this thread runs now, when backward nodes are read from autograd instead of a
// callback per node (see "Backward nodes without a callback"): an anchor like a pushed backward
// node, but kept beside the stack, above the `depth` frames that were open when it was first seen.
// It is numbered (frame.ordinal) only when first used as an anchor, by a launch or by an anchor
// opened in it: a node seen only through its ops (while ops are observed) must not shift the
// numbering, or launch keys would differ between observed and inferred steps.
// A run is one node in one graph task: the same node object runs again in the next backward
// (AccumulateGrad, whose sequence number is always the same, or a graph kept with retain_graph).
struct NodeRun {
  const void* ptr = nullptr;
  uint64_t seq = 0;
  int task = -1;  // the graph task's id
  size_t depth = 0;
  bool on = false;
  bool numbered = false;
  bool top = false;  // numbered with no anchor around it: its end is an outermost anchor's
  Frame frame{};
};

struct ThreadState {
  std::vector<Frame> stack;
  NodeRun node;
  std::unordered_map<const char*, uint32_t> node_names;  // a node class's name id (0: asked per node)
  uint32_t base = 0;
  uint64_t epoch = UINT64_MAX;
  std::unordered_map<uint64_t, uint32_t> trie;
  std::unordered_map<const char*, uint32_t> names;
  std::unique_ptr<NameSlot[]> name_slots{new NameSlot[NAME_SLOTS]()};
  std::unique_ptr<PlaceSlot[]> place_slots{new PlaceSlot[PLACE_SLOTS]()};
  std::unique_ptr<OpSlot[]> op_slots{new OpSlot[OP_SLOTS]()};
  Ranges* ranges = nullptr;
  uint32_t anchors = 0;       // anchor frames on the stack
  uint32_t last_top = 0;      // the last outermost anchor that closed on this thread
  uint32_t top_launches = 0;  // launches since then with no anchor open
  uint32_t last_place = 0;    // the place given to this thread's last launch
  std::vector<uint32_t> opened;  // launch_place's scratch list (first_launches)
};

// The calling thread's state, reached through a plain pointer: a thread_local of a class type goes
// through an initialization guard and a __tls_get_addr call at every use (five to ten of them per
// callback, measured), a trivial pointer through one lookup per function. Its owner frees it
// when the thread ends.
thread_local ThreadState* t_state = nullptr;
struct ThreadOwner {
  ~ThreadOwner() {
    delete t_state;
    t_state = nullptr;
  }
};
thread_local ThreadOwner t_owner;

ThreadState& new_state() {
  (void)&t_owner;  // constructed here, so its destructor runs at the thread's end
  t_state = new ThreadState();
  return *t_state;
}

inline ThreadState& raw_state() {
  ThreadState* p = t_state;
  return p ? *p : new_state();
}

void restart(ThreadState& s, uint64_t epoch) {  // a stack from before the last install: its exits will never come
  s.stack.clear();
  s.anchors = 0;
  s.last_top = s.top_launches = s.last_place = 0;
  s.node.on = false;
  s.epoch = epoch;
}

inline ThreadState& state() {
  ThreadState& s = raw_state();
  uint64_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (s.epoch != epoch) restart(s, epoch);
  return s;
}

inline uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Whether the thread's autograd node (when read at launches) is above the stack's frame i.
inline bool node_above(const ThreadState& s, size_t i) { return s.node.on && i < s.node.depth; }

inline uint32_t current(ThreadState& s) {
  if (s.node.on && s.stack.size() <= s.node.depth) return s.node.frame.node;
  return s.stack.empty() ? s.base : s.stack.back().node;
}

Frame* stack_anchor(ThreadState& s, size_t below) {
  for (size_t i = below; i-- > 0;)
    if (s.stack[i].anchor) return &s.stack[i];
  return nullptr;
}

Frame* innermost_anchor(ThreadState& s) {
  for (size_t i = s.stack.size(); i-- > 0;) {
    if (node_above(s, i)) return &s.node.frame;
    if (s.stack[i].anchor) return &s.stack[i];
  }
  return s.node.on ? &s.node.frame : nullptr;
}

// The innermost anchor, as a launch key or an anchor opened in it uses it: a NodeRun is numbered
// inside the anchor it runs in (or, at the top, after the last outermost anchor that closed).
Frame* keyed_anchor(ThreadState& s) {
  Frame* a = innermost_anchor(s);
  if (a == &s.node.frame && !s.node.numbered) {
    Frame* outer = stack_anchor(s, s.node.depth);
    a->ordinal = outer ? outer->children++ : s.last_top;
    s.node.numbered = true;
    s.node.top = !outer;
  }
  return a;
}

// Where a module, a user scope or a backward node opens: the current place; with ops inferred,
// the innermost anchor (or the base), so an anchor's place never depends on whether the op it
// may run inside (an autograd Function's apply, say) is observed at the time.
uint32_t anchor_parent(ThreadState& s) {
  if (!g_infer.load(std::memory_order_relaxed)) return current(s);
  Frame* a = innermost_anchor(s);
  return a ? a->node : s.base;
}

// Opens a frame. An anchor is numbered inside the anchor it opens in (or, at the top, after the
// last outermost anchor that closed), so a launch's key does not depend on whether ops are seen.
void push(ThreadState& s, uint32_t node, uint8_t timed, uint8_t module, uint8_t engine, uint8_t anchor) {
  uint32_t ordinal = 0;
  if (anchor) {
    Frame* outer = keyed_anchor(s);
    ordinal = outer ? outer->children++ : s.last_top;
    s.anchors++;
  }
  s.stack.push_back(Frame{node, timed, module, engine, anchor, 0, ordinal, 0, 0, timed ? now_ns() : 0});
}

// Spans of timed frames (modules, backward nodes, user scopes, observed ops) for a trace, when
// asked (deut_spans): one fixed buffer filled by an atomic counter, so a frame's close costs one
// fetch_add and a 32-byte store; frames past its end are counted (deut_span_count - capacity).
struct Span {
  uint32_t node;
  uint32_t pad;
  uint64_t thread;  // pthread_self(): Python's threading.get_ident() of the thread
  uint64_t t0, t1;  // CLOCK_MONOTONIC ns: Python's time.perf_counter_ns()
};
Span* g_spans = nullptr;
uint64_t g_span_cap = 0;
std::atomic<uint64_t> g_span_n{0};

// Closes the top frame: its time and one call are added to its node. With ops inferred, an op's
// calls are counted at launches instead (the calls that launched a kernel), as they are then
// counted whether the op is observed or inferred.
Frame pop(ThreadState& s) {
  Frame f = s.stack.back();
  s.stack.pop_back();
  if (f.timed) {
    uint64_t t1 = now_ns();
    if (g_spans) {
      uint64_t i = g_span_n.fetch_add(1, std::memory_order_relaxed);
      if (i < g_span_cap) g_spans[i] = Span{f.node, 0, uint64_t(pthread_self()), f.t0, t1};
    }
    Stat* st = chunk_of(g_stat, f.node, false);
    if (st) {
      st->ns.fetch_add(t1 - f.t0, std::memory_order_relaxed);
      if (f.anchor || !g_infer.load(std::memory_order_relaxed)) st->calls.fetch_add(1, std::memory_order_relaxed);
    }
  }
  if (f.anchor && s.anchors && --s.anchors == 0) {
    s.last_top = f.node;
    s.top_launches = 0;
  }
  return f;
}

// The same address may later hold another string (a freed record_function name): a hit is
// checked against the interned text.
inline bool same_text(uint32_t id, const char* text) {
  Name* n = chunk_of(g_names, id, false);
  return n && (n->text == text || !std::strcmp(n->text, text));
}

uint32_t intern(ThreadState& s, const char* text) {
  NameSlot& slot = s.name_slots[(uintptr_t(text) >> 3) & (NAME_SLOTS - 1)];
  if (slot.text == text && same_text(slot.id, text)) return slot.id;
  uint32_t id = 0;
  auto it = s.names.find(text);
  if (it != s.names.end() && same_text(it->second, text)) {
    id = it->second;
  } else {
    id = intern_global(text);
    if (s.names.size() > 65536) s.names.clear();
    s.names[text] = id;
  }
  slot = NameSlot{text, id};
  return id;
}

uint32_t child(ThreadState& s, uint32_t parent, uint8_t kind, uint32_t name) {
  uint64_t key = (uint64_t(parent) << 32) | (uint64_t(kind) << 24) | (name & 0xFFFFFF);
  PlaceSlot& slot = s.place_slots[(key * 0x9E3779B97F4A7C15ull) >> (64 - 12)];
  if (slot.key == key && slot.id) return slot.id;
  uint32_t id;
  auto it = s.trie.find(key);
  if (it != s.trie.end()) {
    id = it->second;
  } else {
    id = child_global(key, parent, name, kind);
    if (s.trie.size() > 262144) s.trie.clear();
    s.trie[key] = id;
  }
  slot = PlaceSlot{key, id};
  return id;
}

Ranges* my_ranges(ThreadState& s) {
  if (!s.ranges) s.ranges = ranges_for(at::RecordFunction::currentThreadId(), true);
  return s.ranges;
}

// The innermost module call on forward thread `tid` whose range holds `seq`; 0 when none.
uint32_t module_of(uint64_t tid, uint64_t seq, uint32_t* base) {
  Ranges* r = ranges_for(tid, false);
  if (!r) {
    *base = g_last_base.load(std::memory_order_relaxed);
    return 0;
  }
  std::lock_guard<std::mutex> lock(r->mu);
  *base = r->base ? r->base : r->last_base ? r->last_base : g_last_base.load(std::memory_order_relaxed);
  auto it = std::upper_bound(r->v.begin(), r->v.end(), seq, [](uint64_t q, const Range& x) { return q < x.s0; });
  int64_t i = int64_t(it - r->v.begin()) - 1 + r->offset;
  while (i >= r->offset) {
    const Range& x = r->v[size_t(i - r->offset)];
    if (seq < x.s1) return x.node;
    i = x.parent;
  }
  return 0;
}

// A backward node's place: `<module that made it> > backward > <node>`, found by the node's
// forward thread and sequence number; a node of no module opens where it runs (`parent`), or at
// the base of its forward thread.
uint32_t backward_place(ThreadState& s, uint64_t forward_tid, uint64_t seq, uint32_t name, uint32_t parent) {
  uint32_t base = 0;
  uint32_t module = module_of(forward_tid, seq, &base);
  uint32_t where = module ? module : (parent ? parent : base);
  static uint32_t backward_name = intern_global("backward");
  return child(s, child(s, where, K_MARK, backward_name), K_BACKWARD, name);
}

// ---- Backward nodes without a callback --------------------------------------------------------
// With ops inferred (a GPU run), backward nodes are not seen through a RecordFunction callback:
// with one registered, autograd builds a RecordFunction and the node's name string for every node
// it runs, which was the largest cost left on a launch-bound step (docs/benchmarks.md). Autograd
// keeps the node a thread runs (get_current_node, set around every node it evaluates), and each
// node has its forward thread and sequence number: that is all the callback used. So at every
// event of a thread (a launch, a module call, a scope, an observed op) the node is read, and when
// it changed the thread's NodeRun is ended and a new one begun; it then acts as the innermost
// anchor for what happens in it (launch keys, modules recomputed by checkpointing, ops). Its
// calls are the runs that launched a kernel; it has no CPU time (nothing times it).

uint32_t node_name(ThreadState& s, const torch::autograd::Node& n) {
  const char* type = typeid(n).name();
  auto it = s.node_names.find(type);
  if (it != s.node_names.end() && it->second) return it->second;
  uint32_t id = intern_global(n.name().c_str());
  // a Python autograd Function's node is named by its Python class: asked for each node
  if (it == s.node_names.end()) s.node_names.emplace(type, std::strstr(type, "PyNode") ? 0 : id);
  return id;
}

// Decided by how the run was numbered, not by the stack when the end is noticed: the end is
// noticed at the thread's next event, which differs whether ops are observed or not.
void end_node(ThreadState& s) {
  s.node.on = false;
  if (s.node.numbered && s.node.top) {  // an outermost anchor closed: launches at the top count again after it
    s.last_top = s.node.frame.node;
    s.top_launches = 0;
  }
}

void begin_node(ThreadState& s, const torch::autograd::Node& n, int task) {
  Frame* outer = stack_anchor(s, s.stack.size());
  uint32_t parent = outer ? outer->node : s.base;
  uint32_t place = backward_place(s, n.thread_id(), n.sequence_nr(), node_name(s, n), parent);
  s.node.ptr = &n;
  s.node.seq = n.sequence_nr();
  s.node.task = task;
  s.node.depth = s.stack.size();
  s.node.frame = Frame{place, 0, 0, 0, 1, 0, 0, 0, 0, 0};
  s.node.on = true;
  s.node.numbered = s.node.top = false;
}

// The thread's NodeRun brought up to date with the node autograd runs on it now.
void read_node(ThreadState& s) {
  auto held = torch::autograd::get_current_node();  // keeps the node alive while it is read
  const torch::autograd::Node* n = held.get();
  int task = n ? torch::autograd::get_current_graph_task_id() : -1;
  if (s.node.on) {
    if (n == s.node.ptr && n && n->sequence_nr() == s.node.seq && task == s.node.task &&
        s.stack.size() >= s.node.depth)
      return;
    end_node(s);
  }
  if (n) begin_node(s, *n, task);
}

// The same, at every event: inline, as every op of a run that does not read nodes asks it.
inline void sync_node(ThreadState& s) {
  if (g_nodes_at_launch.load(std::memory_order_relaxed)) read_node(s);
}

// The first launch of a node's run counts one call of it.
void count_node_launch(ThreadState& s) {
  if (!s.node.on || s.node.frame.launched) return;
  s.node.frame.launched = 1;
  if (Stat* st = chunk_of(g_stat, s.node.frame.node, false)) st->calls.fetch_add(1, std::memory_order_relaxed);
}

int64_t dim(const c10::IValue& v, size_t i) {
  if (!v.isTensor()) return -1;
  const at::Tensor& t = v.toTensor();
  return i < size_t(t.dim()) ? t.sizes()[i] : -1;
}

std::vector<int64_t> sizes(const c10::IValue& v) {
  if (!v.isTensor()) return {};
  auto s = v.toTensor().sizes();
  return std::vector<int64_t>(s.begin(), s.end());
}

int64_t prod(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); i++) p *= v[i];
  return p;
}

int64_t at_or_first(const std::vector<int64_t>& v, size_t i, int64_t fallback) {
  if (v.empty()) return fallback;
  return i < v.size() ? v[i] : v[0];
}

std::vector<int64_t> int_list(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  return {};
}

// batch, channels and spatial extents as torch.utils.flop_counter.conv_flop_count counts them.
int64_t conv_count(const std::vector<int64_t>& x, const std::vector<int64_t>& w, const std::vector<int64_t>& out,
                   bool transposed) {
  if (x.size() < 2 || w.size() < 2) return 0;
  const std::vector<int64_t>& conv = transposed ? x : out;
  if (conv.size() < 2) return 0;
  return prod(conv, 2) * prod(w, 2) * x[0] * w[0] * w[1] * 2;
}

std::vector<int64_t> swap01(std::vector<int64_t> v) {
  if (v.size() >= 2) std::swap(v[0], v[1]);
  return v;
}

int64_t sdpa_count(int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t dq, int64_t dv) {
  return 2 * b * h * sq * dq * sk + 2 * b * h * sq * sk * dv;
}

int64_t flops_of(uint8_t kind, const at::RecordFunction& fn) {
  auto in = fn.inputs();
  switch (kind) {
    case F_MM:
      if (in.size() < 2) return 0;
      return 2 * dim(in[0], 0) * dim(in[0], 1) * dim(in[1], 1);
    case F_ADDMM:
      if (in.size() < 3) return 0;
      return 2 * dim(in[1], 0) * dim(in[1], 1) * dim(in[2], 1);
    case F_BMM:
      if (in.size() < 2) return 0;
      return 2 * dim(in[0], 0) * dim(in[0], 1) * dim(in[0], 2) * dim(in[1], 2);
    case F_BADDBMM:
      if (in.size() < 3) return 0;
      return 2 * dim(in[1], 0) * dim(in[1], 1) * dim(in[1], 2) * dim(in[2], 2);
    case F_CONV: {  // input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
      if (in.size() < 7 || !in[6].isBool()) return 0;
      auto x = sizes(in[0]), w = sizes(in[1]);
      bool transposed = in[6].toBool();
      if (x.size() < 3 || w.size() != x.size()) return 0;
      auto stride = int_list(in[3]), pad = int_list(in[4]), dil = int_list(in[5]);
      std::vector<int64_t> out = {x[0], w[0]};
      for (size_t i = 2; i < x.size(); i++) {
        int64_t s = at_or_first(stride, i - 2, 1), p = at_or_first(pad, i - 2, 0), d = at_or_first(dil, i - 2, 1);
        out.push_back((x[i] + 2 * p - d * (w[i] - 1) - 1) / s + 1);
      }
      return conv_count(x, w, out, transposed);
    }
    case F_CONV_BWD: {  // grad_out, input, weight, bias_sizes, stride, padding, dilation, transposed,
                        // output_padding, groups, output_mask
      if (in.size() < 11 || !in[7].isBool() || !in[10].isBoolList()) return 0;
      auto g = sizes(in[0]), x = sizes(in[1]), w = sizes(in[2]);
      bool transposed = in[7].toBool();
      auto mask = in[10].toBoolList();
      int64_t f = 0;
      if (mask.size() > 0 && mask.get(0)) f += conv_count(g, w, x, !transposed);
      if (mask.size() > 1 && mask.get(1)) {
        if (transposed)
          f += conv_count(swap01(g), swap01(x), swap01(w), false);
        else
          f += conv_count(swap01(x), swap01(g), swap01(w), false);
      }
      return f;
    }
    case F_SDPA: {  // query, key, value: (batch, heads, seq, dim)
      if (in.size() < 3) return 0;
      return sdpa_count(dim(in[0], 0), dim(in[0], 1), dim(in[0], 2), dim(in[1], 2), dim(in[0], 3), dim(in[2], 3));
    }
    case F_SDPA_BWD: {  // grad_out, query, key, value
      if (in.size() < 4) return 0;
      int64_t b = dim(in[1], 0), h = dim(in[1], 1), sq = dim(in[1], 2), dq = dim(in[1], 3);
      int64_t sk = dim(in[2], 2), dv = dim(in[3], 3);
      // the scores recomputed, then four products (torch.utils.flop_counter's count)
      return 2 * b * h * sq * dq * sk + 2 * b * h * sq * dv * sk + 2 * b * h * sk * sq * dv +
             2 * b * h * sq * sk * dq + 2 * b * h * dq * sq * sk;
    }
    default:
      return 0;
  }
}

inline bool scope_is_anchor(at::RecordScope scope) { return scope != at::RecordScope::FUNCTION; }

bool engine_frame(const char* name) {  // the engine's wrapper around each backward node
  // two characters first: every aten op starts with 'a' too
  return name[0] == 'a' && name[1] == 'u' && !std::strncmp(name, "autograd::engine::evaluate_function", 35);
}

// With -c python,torch: the calling thread's Python call path (the session's id of it), for a user
// scope (the optimizer's step, a record_function) opened outside any module or other anchor, so
// it lands under the script line that opened it as module calls do; 0 for none.
std::atomic<uint32_t (*)()> g_scope_base{nullptr};

void set_base(uint32_t name, bool origin);

// An aten op (or another FUNCTION-scope record) opens under the current place: the most frequent
// event by far, so its place, interned name and flop kind come from one probe of the thread's op
// cache; a miss takes the name and place caches (intern, child) and fills the slot.
void op_enter(ThreadState& s, const at::RecordFunction& fn, const char* name) {
  uint32_t parent = current(s);
  if (engine_frame(name)) {
    push(s, parent, 0, 0, 1, 0);
    return;
  }
  uintptr_t h = (uintptr_t(name) >> 3) ^ (uintptr_t(parent) * 0x9E3779B1u);
  OpSlot& slot = s.op_slots[(h ^ (h >> 12)) & (OP_SLOTS - 1)];
  if (slot.text != name || slot.parent != parent || !slot.node || std::strcmp(slot.interned, name)) {
    uint32_t id = intern(s, name);
    Name* n = chunk_of(g_names, id, false);
    slot = OpSlot{name, n && n->text ? n->text : "", parent, child(s, parent, K_OP, id), n ? n->flop : uint8_t(F_NONE)};
    if (!n || !n->text) slot.node = 0;  // the tables were full: asked again next time
  }
  uint32_t node = slot.node ? slot.node : child(s, parent, K_OP, intern(s, name));
  if (slot.flop && g_flops_on.load(std::memory_order_relaxed) && fn.needsInputs()) {
    int64_t f = flops_of(slot.flop, fn);
    Stat* st = stat(node);
    if (f > 0 && st) st->flops.fetch_add(uint64_t(f), std::memory_order_relaxed);
  }
  push(s, node, 1, 0, 0, 0);
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  ThreadState& s = state();
  sync_node(s);
  const char* name = fn.name();
  at::RecordScope scope = fn.scope();
  bool based = false;
  if (scope == at::RecordScope::USER_SCOPE && !s.anchors && !s.base && !s.node.on) {
    uint32_t (*scope_base)() = g_scope_base.load(std::memory_order_relaxed);
    uint32_t context_id = scope_base ? scope_base() : 0;
    if (context_id) set_base(context_id, false);  // never where backward work of no module is filed
    based = context_id != 0;
  }
  if (scope == at::RecordScope::FUNCTION) {
    op_enter(s, fn, name);
    return nullptr;
  }
  uint32_t parent = scope_is_anchor(scope) ? anchor_parent(s) : current(s);
  uint32_t node;
  if (scope == at::RecordScope::BACKWARD_FUNCTION) {
    node = backward_place(s, fn.forwardThreadId(), uint64_t(fn.seqNr()), intern(s, name), parent);
    // The engine's work around the node (summing gradients to shape, accumulating them) runs
    // after it, inside evaluate_function: it belongs to the same node.
    if (!s.stack.empty() && s.stack.back().engine) s.stack.back().node = node;
  } else {
    node = child(s, parent, K_SCOPE, intern(s, name));
  }
  push(s, node, 1, 0, 0, scope_is_anchor(scope));
  s.stack.back().based = based;
  return nullptr;
}

void on_exit(const at::RecordFunction&, at::ObserverContext*) {
  ThreadState& s = state();
  if (s.stack.empty()) return;
  Frame f = pop(s);
  if (f.based) {
    set_base(0, false);
    s.last_top = f.node;  // launches at the top count again after this scope (keys stay apart)
  }
}

// The place a module stack starts from on this thread (a scope or a Python path, by the
// session's id, interned as a base node); 0 for none. A scope's entry and exit are also where
// launches outside any anchor start counting again, so a loop of scoped steps repeats its keys.
// `origin`: whether backward work of no module may later be filed there (the base of a module
// call; not a user scope's, which would take the loss's backward to the line of zero_grad).
void set_base(uint32_t context_id, bool origin) {
  ThreadState& s = state();
  sync_node(s);  // a run that ended before this resets the counts below, whether ops are observed or not
  uint32_t node = context_id ? child(s, 0, K_BASE, context_id) : 0;
  // launches outside any anchor count again from here; after a base is cleared, from that base
  // (so the top-level launches after two different bases are keyed apart)
  s.last_top = node ? 0 : s.base;
  s.top_launches = 0;
  s.base = node;
  Ranges* r = my_ranges(s);
  std::lock_guard<std::mutex> lock(r->mu);
  r->base = node;
  if (node && origin) {
    r->last_base = node;
    g_last_base.store(node, std::memory_order_relaxed);
  }
}

// ---- Ops inferred at launch -------------------------------------------------------------------
// Observing every aten op costs torch about 170 ns an op before our callback runs, and a
// launch-bound training step runs over ten ops for each kernel it launches (docs/benchmarks.md).
// So with a GPU, ops are observed only until what each launch ran under repeats: a launch is
// keyed by its innermost anchor (a module call, a backward node or a user scope, all seen
// without the op callback) and its position in it, and the op place it had is learned together
// with the kernel's name. Once MIN_STABLE and twice the table's size launches in a row matched
// what was learned, the op callback is disabled and each launch gets its learned place, provided
// the kernel launched at that position is the one learned. Any other launch (a new position, a
// different kernel) lands under its anchor, and the op callback is enabled again to relearn.

struct LaunchKey {
  uint32_t anchor;  // the anchor's place, or at the top the thread's base
  uint32_t after;   // the anchor's ordinal, or at the top the last outermost anchor that closed
  uint32_t index;   // the launch's position among the anchor's (or the top's) launches
  uint32_t top;
  bool operator==(const LaunchKey& o) const {
    return anchor == o.anchor && after == o.after && index == o.index && top == o.top;
  }
};
struct LaunchKeyHash {
  size_t operator()(const LaunchKey& k) const {
    uint64_t a = (uint64_t(k.anchor) << 32) | k.after, b = (uint64_t(k.index) << 1) | k.top;
    return size_t((a * 0x9E3779B97F4A7C15ull) ^ (b * 0xC2B2AE3D27D4EB4Full));
  }
};
struct Learned {
  uint32_t place;
  std::string symbol;
  std::vector<uint32_t> opened;  // the op calls this launch was the first launch of
};

void count_calls(const std::vector<uint32_t>& nodes) {
  for (uint32_t node : nodes)
    if (Stat* st = chunk_of(g_stat, node, false)) st->calls.fetch_add(1, std::memory_order_relaxed);
}

// The observed op calls (between the innermost anchor and the top) that had launched nothing yet,
// into the thread's scratch list (kept between launches: no allocation per launch).
const std::vector<uint32_t>& first_launches(ThreadState& s) {
  std::vector<uint32_t>& opened = s.opened;
  opened.clear();
  for (size_t i = s.stack.size(); i-- > 0;) {
    Frame& f = s.stack[i];
    if (f.anchor || node_above(s, i)) break;
    if (f.engine || f.launched) continue;
    f.launched = 1;
    opened.push_back(f.node);
  }
  return opened;
}

constexpr uint64_t MIN_STABLE = 64;
constexpr size_t MAX_LEARNED = 1u << 20;
// Launches past this position in one anchor's call (or, outside every anchor, since the last
// outermost anchor closed) are never learned. A loop of launches outside any module keeps counting
// up, so its keys never repeat: learning each one cost a table entry (a lock, three allocations,
// a table that grew to MAX_LEARNED) at every launch, 1 to 2 us on a 2-core CPU (benchmarks/
// tiny_ops.py's loop, its launches simulated), for nothing: they could never be inferred. Past the cap a launch costs none of that, and it keeps ops observed (or turns them on
// again) exactly as an unlearned launch did, so every launch lands where it did.
constexpr uint32_t MAX_POSITION = 1u << 16;
std::mutex g_lmu;  // the table and the op callback's switching
std::unordered_map<LaunchKey, Learned, LaunchKeyHash> g_learned;
std::atomic<uint64_t> g_stable{0};  // launches in a row that repeated what was learned
std::atomic<int> g_observing{1};  // the op callback is enabled
at::CallbackHandle g_ops_handle = 0;
std::atomic<uint64_t> g_inferred{0}, g_missed{0}, g_switches{0}, g_unlearned{0};

void set_observing(bool on) {  // under g_lmu
  if (on == bool(g_observing.load(std::memory_order_relaxed)) || !g_ops_handle) return;
  if (on)
    at::reenableCallback(g_ops_handle);
  else
    at::disableCallback(g_ops_handle);
  g_observing.store(on ? 1 : 0, std::memory_order_relaxed);
  g_switches.fetch_add(1, std::memory_order_relaxed);
}

// A launch past MAX_POSITION: what an unlearned launch did, without the table. While ops are
// observed it breaks the run of repeats (no lock: one relaxed store, and only when the run was
// not broken already); while they are inferred it is a miss and turns them on again.
uint32_t unlearned_place(uint32_t here) {
  g_unlearned.fetch_add(1, std::memory_order_relaxed);
  if (g_observing.load(std::memory_order_relaxed)) {
    if (g_stable.load(std::memory_order_relaxed)) g_stable.store(0, std::memory_order_relaxed);
    return here;
  }
  std::lock_guard<std::mutex> lock(g_lmu);
  g_missed.fetch_add(1, std::memory_order_relaxed);
  g_stable.store(0, std::memory_order_relaxed);
  set_observing(true);
  return here;
}

uint32_t launch_place(ThreadState& s, const char* symbol) {
  uint32_t here = current(s);
  LaunchKey key;
  if (Frame* a = keyed_anchor(s))
    key = LaunchKey{a->node, a->ordinal, a->launches++, 0};
  else
    key = LaunchKey{s.base, s.last_top, s.top_launches++, 1};
  const char* name = symbol ? symbol : "";
  uint32_t place = here;
  count_node_launch(s);
  const std::vector<uint32_t>& opened = first_launches(s);  // empty while ops are not observed
  count_calls(opened);
  if (key.index >= MAX_POSITION) return unlearned_place(here);
  std::lock_guard<std::mutex> lock(g_lmu);
  auto it = g_learned.find(key);
  if (g_observing.load(std::memory_order_relaxed)) {
    if (it != g_learned.end() && it->second.place == here && it->second.symbol == name &&
        it->second.opened == opened) {
      uint64_t stable = g_stable.fetch_add(1, std::memory_order_relaxed) + 1;
      if (stable >= std::max<uint64_t>(MIN_STABLE, 2 * g_learned.size())) set_observing(false);
    } else {
      if (it == g_learned.end() && g_learned.size() >= MAX_LEARNED) g_learned.clear();
      g_learned[key] = Learned{here, name, opened};
      g_stable.store(0, std::memory_order_relaxed);
    }
  } else if (it != g_learned.end() && it->second.symbol == name) {
    place = it->second.place;
    count_calls(it->second.opened);
    g_inferred.fetch_add(1, std::memory_order_relaxed);
  } else {
    g_missed.fetch_add(1, std::memory_order_relaxed);
    g_stable.store(0, std::memory_order_relaxed);
    set_observing(true);
  }
  return place;
}

}  // namespace

extern "C" {

int deut_abi(void) { return 1; }

// Keep the spans of timed frames, up to capacity (0: stop and free). Call between sessions only.
int deut_spans(uint64_t capacity) {
  delete[] g_spans;
  g_spans = nullptr;
  g_span_cap = 0;
  g_span_n.store(0);
  if (capacity) {
    g_spans = new (std::nothrow) Span[capacity];
    if (!g_spans) return -1;
    g_span_cap = capacity;
  }
  return 0;
}

// Spans closed so far (may exceed the capacity: the rest were not kept), and the buffer.
uint64_t deut_span_count(void) { return g_span_n.load(); }
const void* deut_span_data(void) { return g_spans; }

// Start seeing ops. flags: 1 = flops (read the input shapes of matmul, conv and attention ops);
// 2 = no aten ops (only backward nodes and user scopes: an aten op then runs no callback at all,
// which is most of the cost on a launch-bound step). 0 on success.
// 4 = ops inferred at launches once they repeat (deut_launch; see "Ops inferred at launch").
// 8 = with 4, backward nodes read from autograd at launches, with no callback per node (see
// "Backward nodes without a callback").
int deut_install(int flags) {
  if (g_handle) return 0;
  bool flops = flags & 1, ops = !(flags & 2), infer = ops && (flags & 4), nodes_at_launch = infer && (flags & 8);
  g_flops_on.store(flops ? 1 : 0);
  g_epoch.fetch_add(1);
  {
    std::lock_guard<std::mutex> lock(g_lmu);
    g_learned.clear();
    g_stable.store(0);
    g_observing.store(1);
  }
  g_infer.store(infer ? 1 : 0);
  g_nodes_at_launch.store(nodes_at_launch ? 1 : 0);
  g_inferred.store(0);
  g_missed.store(0);
  g_switches.store(0);
  g_unlearned.store(0);
  // backward nodes pass their sequence number whether ids are asked or not
  auto anchors = at::RecordFunctionCallback(on_enter, on_exit).needsIds(false);
  if (nodes_at_launch)
    anchors.scopes({at::RecordScope::USER_SCOPE});
  else
    anchors.scopes({at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE});
  g_handle = at::addGlobalCallback(anchors);
  if (ops)
    g_ops_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_enter, on_exit)
                                             .needsInputs(flops)
                                             .needsIds(false)
                                             .scopes({at::RecordScope::FUNCTION}));
  return g_handle && (!ops || g_ops_handle) ? 0 : -1;
}

void deut_remove(void) {
  if (g_handle) at::removeCallback(g_handle);
  if (g_ops_handle) at::removeCallback(g_ops_handle);
  g_handle = g_ops_handle = 0;
  g_infer.store(0);
  g_nodes_at_launch.store(0);
  g_epoch.fetch_add(1);
}

// The place of a launch from the calling thread (the CUPTI shim calls this at each launch, and
// with is_launch 0 for a graph node made by a captured launch, which is not a launch of its own):
// the current place while ops are observed, else the place learned for this launch's position.
uint32_t deut_launch(const char* symbol, int is_launch) {
  ThreadState& s = raw_state();
  uint64_t epoch = g_epoch.load(std::memory_order_relaxed);
  if (s.epoch != epoch) {
    // a thread with no event this session yet: its base, unless it runs autograd's nodes (its
    // threads may see no callback at all before their first launch when nodes are read here)
    if (!g_nodes_at_launch.load(std::memory_order_relaxed) || !torch::autograd::get_current_node()) return s.base;
    restart(s, epoch);
  }
  sync_node(s);
  if (!g_infer.load(std::memory_order_relaxed)) return current(s);
  if (!is_launch) return g_observing.load(std::memory_order_relaxed) || !s.last_place ? current(s) : s.last_place;
  s.last_place = launch_place(s, symbol);
  return s.last_place;
}

// How inference went: launches given a learned place, launches that missed (and so re-enabled
// the op callback), switches of the op callback, whether ops are observed now, places learned,
// launches past MAX_POSITION (never learned). `out` holds 6 values.
void deut_infer_stats(uint64_t* out) {
  std::lock_guard<std::mutex> lock(g_lmu);
  out[0] = g_inferred.load();
  out[1] = g_missed.load();
  out[2] = g_switches.load();
  out[3] = uint64_t(g_observing.load());
  out[4] = g_learned.size();
  out[5] = g_unlearned.load();
}

// Totals start again from zero (a new session).
void deut_reset(void) {
  uint32_t n = g_node_count.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n; i++) {
    Stat* st = stat(i);
    if (!st) continue;
    st->ns.store(0, std::memory_order_relaxed);
    st->calls.store(0, std::memory_order_relaxed);
    st->flops.store(0, std::memory_order_relaxed);
  }
}

uint32_t deut_intern(const char* text) { return intern(state(), text); }

// The calling thread's place now (the CUPTI shim calls this at each launch).
uint32_t deut_current(void) {
  ThreadState& s = raw_state();
  if (s.epoch != g_epoch.load(std::memory_order_relaxed)) return s.base;
  sync_node(s);
  return current(s);
}

// The place a module stack starts from on this thread (a scope or a Python path, by the
// session's id, interned as a base node); 0 for none (set_base).
void deut_set_base(uint32_t context_id) { set_base(context_id, true); }

void deut_module_enter(uint32_t name) {
  ThreadState& s = state();
  sync_node(s);
  uint32_t node = child(s, anchor_parent(s), K_MODULE, name);
  push(s, node, 1, 1, 0, 1);
  Ranges* r = my_ranges(s);
  std::lock_guard<std::mutex> lock(r->mu);
  int64_t index = r->offset + int64_t(r->v.size());
  r->v.push_back(Range{at::sequence_number::peek(), UINT64_MAX, node, r->open.empty() ? -1 : r->open.back()});
  r->open.push_back(index);
}

void deut_module_exit(void) {
  ThreadState& s = state();
  while (!s.stack.empty()) {  // frames of ops left open by an exception are closed with it
    if (pop(s).module) break;
  }
  Ranges* r = my_ranges(s);
  std::lock_guard<std::mutex> lock(r->mu);
  if (r->open.empty()) return;
  int64_t index = r->open.back();
  r->open.pop_back();
  if (index >= r->offset) r->v[size_t(index - r->offset)].s1 = at::sequence_number::peek();
  if (r->open.empty() && r->v.size() > (1u << 20)) {  // old steps' ranges: their backward is done
    size_t drop = r->v.size() / 2;
    r->v.erase(r->v.begin(), r->v.begin() + int64_t(drop));
    r->offset += int64_t(drop);
  }
}

uint32_t deut_node_count(void) { return g_node_count.load(std::memory_order_acquire); }
uint32_t deut_name_count(void) { return g_name_count.load(std::memory_order_acquire); }
uint64_t deut_dropped(void) { return g_dropped.load(std::memory_order_relaxed); }

const char* deut_name(uint32_t id) {
  Name* n = chunk_of(g_names, id, false);
  return n && n->text ? n->text : "";
}

// Nodes [from, to): parent, name, kind, and the totals so far.
void deut_read(uint32_t from, uint32_t to, uint32_t* parent, uint32_t* name, uint8_t* kind, uint64_t* ns,
               uint64_t* calls, uint64_t* flops) {
  for (uint32_t i = from; i < to; i++) {
    NodeInfo* info = chunk_of(g_info, i, false);
    Stat* st = stat(i);
    size_t k = i - from;
    parent[k] = info ? info->parent : 0;
    name[k] = info ? info->name : 0;
    kind[k] = info ? info->kind : 0;
    ns[k] = st ? st->ns.load(std::memory_order_relaxed) : 0;
    calls[k] = st ? st->calls.load(std::memory_order_relaxed) : 0;
    flops[k] = st ? st->flops.load(std::memory_order_relaxed) : 0;
  }
}

}  // extern "C"

// ---- Module calls from Python, without Python per call ---------------------------------------
// The torch context wraps nn.Module._call_impl. Done in Python, the wrapper's own work (a
// thread-local stack, a name lookup, two ctypes calls) cost about 3 us a module call on a slow
// CPU, more than torch's own call path; here it is one C call. The Python wrapper keeps only
// the `torch.compiler.is_compiling()` test (Dynamo must trace it, and never this function) and
// calls deut_call_impl(module, *args, **kwargs), which:
//   - for an outermost call asks Python's `root(module)` for (submodule map, name id) (it also
//     sets the base for -c python,torch), and calls `root_done()` when it returns;
//   - for a nested call finds the module's name under its caller in a per-thread cache keyed by
//     (module, caller's map, caller's attribute path), asking Python's `child(module, map, path)`
//     for (path, name id) only on a miss;
//   - pushes the module (deut_module_enter), calls the original _call_impl, and pops it,
//     whether the call returned or raised.
// Keys are object addresses, as the Python wrapper's were ids: the maps and paths they point to
// are kept alive by Python's caches (the root maps) and by this cache (the paths).
#ifdef DEUT_PYTHON
namespace {

struct PyFrame {
  PyObject* qmap;  // the submodule map of the outermost module (borrowed: Python's cache keeps it)
  PyObject* qual;  // this module's attribute path (owned by the name cache, or the empty string)
};

struct PyNameKey {
  PyObject* module;
  PyObject* qmap;
  PyObject* qual;
  bool operator==(const PyNameKey& o) const { return module == o.module && qmap == o.qmap && qual == o.qual; }
};
struct PyNameKeyHash {
  size_t operator()(const PyNameKey& k) const {
    return size_t((uintptr_t(k.module) * 0x9E3779B97F4A7C15ull) ^ (uintptr_t(k.qmap) * 0xC2B2AE3D27D4EB4Full) ^
                  (uintptr_t(k.qual) >> 4));
  }
};
struct PyName {
  PyObject* qual;  // owned
  uint32_t id;
};

struct CallState {
  std::vector<PyFrame> stack;
  std::unordered_map<PyNameKey, PyName, PyNameKeyHash> names;
  uint64_t epoch = 0;
};

thread_local CallState py_t;
PyObject *g_py_original = nullptr, *g_py_root = nullptr, *g_py_child = nullptr, *g_py_root_done = nullptr;
PyObject* g_py_empty = nullptr;
PyObject* g_py_scope_base = nullptr;
uint64_t g_py_epoch = 1;  // under the GIL

void clear_names(CallState& p) {
  for (auto& kv : p.names) Py_DECREF(kv.second.qual);
  p.names.clear();
}

inline CallState& py_state() {
  if (py_t.epoch != g_py_epoch) {  // a new session: names are looked up again (the stack is balanced by its calls)
    clear_names(py_t);
    py_t.epoch = g_py_epoch;
  }
  return py_t;
}

// (first, id) from a Python (object, int) pair; false with a Python error set otherwise.
bool unpack(PyObject* pair, PyObject** first, uint32_t* id) {
  if (!pair) return false;
  if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
    PyErr_SetString(PyExc_TypeError, "deuteron: the torch context's name callback returned no (object, id) pair");
    return false;
  }
  *first = PyTuple_GET_ITEM(pair, 0);
  unsigned long v = PyLong_AsUnsignedLong(PyTuple_GET_ITEM(pair, 1));
  if (PyErr_Occurred()) return false;
  *id = uint32_t(v);
  return true;
}

PyObject* call_impl(PyObject*, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  if (nargs < 1 || !g_py_original) {
    PyErr_SetString(PyExc_TypeError, "deuteron: deut_call_impl(module, *args, **kwargs) called without a session");
    return nullptr;
  }
  PyObject* module = args[0];
  CallState& p = py_state();
  bool root = p.stack.empty();
  PyFrame frame;
  uint32_t id = 0;
  if (root) {
    PyObject* pair = PyObject_CallOneArg(g_py_root, module);
    bool ok = unpack(pair, &frame.qmap, &id);
    Py_XDECREF(pair);  // the map stays alive in the context's cache of root maps
    if (!ok) return nullptr;
    frame.qual = g_py_empty;
  } else {
    const PyFrame& top = p.stack.back();
    PyNameKey key{module, top.qmap, top.qual};
    auto it = p.names.find(key);
    if (it == p.names.end()) {
      PyObject* pair = PyObject_CallFunctionObjArgs(g_py_child, module, top.qmap, top.qual, nullptr);
      PyObject* qual = nullptr;
      if (!unpack(pair, &qual, &id)) {
        Py_XDECREF(pair);
        return nullptr;
      }
      Py_INCREF(qual);
      Py_DECREF(pair);
      if (p.names.size() > 65536) clear_names(p);
      it = p.names.emplace(key, PyName{qual, id}).first;
    }
    frame = PyFrame{top.qmap, it->second.qual};
    id = it->second.id;
  }
  p.stack.push_back(frame);
  deut_module_enter(id);
  PyObject* out = PyObject_Vectorcall(g_py_original, args, size_t(nargs), kwnames);
  p.stack.pop_back();
  deut_module_exit();
  if (root && g_py_root_done && g_py_root_done != Py_None) {
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);  // the call's exception, if any, survives root_done
    PyObject* done = PyObject_CallNoArgs(g_py_root_done);
    if (!done) PyErr_WriteUnraisable(g_py_root_done);
    Py_XDECREF(done);
    PyErr_Restore(type, value, trace);
  }
  return out;
}

PyMethodDef g_call_impl_def = {"deut_call_impl", (PyCFunction)(void (*)(void))call_impl,
                               METH_FASTCALL | METH_KEYWORDS,
                               "A module call under the torch context: deut_call_impl(module, *args, **kwargs)."};

void set_ref(PyObject** slot, PyObject* value) {
  Py_XINCREF(value);
  PyObject* old = *slot;
  *slot = value;
  Py_XDECREF(old);
}

// A Python thread's scope: the context id of its call path, asked for with the GIL taken again
// (torch.ops calls, record_function's among them, release it around the op); other threads have none.
uint32_t call_scope_base() {
  if (!PyGILState_GetThisThreadState()) return 0;
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return 0;
#else
  if (_Py_IsFinalizing()) return 0;
#endif
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject* hook = g_py_scope_base;  // read under the GIL: deut_py_scope_base changes it under it
  uint32_t context_id = 0;
  if (hook) {
    Py_INCREF(hook);
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject* done = PyObject_CallNoArgs(hook);
    if (!done) PyErr_WriteUnraisable(hook);
    if (done && PyLong_Check(done)) context_id = uint32_t(PyLong_AsUnsignedLong(done));
    if (PyErr_Occurred()) PyErr_WriteUnraisable(hook);
    Py_XDECREF(done);
    PyErr_Restore(type, value, trace);
    Py_DECREF(hook);
  }
  PyGILState_Release(gil);
  return context_id;
}

}  // namespace

extern "C" {

// -c python,torch: the Python callable that returns the id of the calling thread's call path (0:
// none) when a user scope opens outside any anchor (see on_enter); None to stop. Called with the
// GIL held.
void deut_py_scope_base(PyObject* hook) {
  g_scope_base.store(nullptr);
  set_ref(&g_py_scope_base, hook == Py_None ? nullptr : hook);
  if (g_py_scope_base) g_scope_base.store(call_scope_base);
}

// The fast path for a session: the original _call_impl and Python's name callbacks (root_done
// may be None). Returns the callable the Python wrapper calls; a new session's configure
// makes every thread look names up again. Called with the GIL held (the library is a PyDLL).
PyObject* deut_py_configure(PyObject* original, PyObject* root, PyObject* child, PyObject* root_done) {
  if (!g_py_empty) g_py_empty = PyUnicode_FromString("");
  set_ref(&g_py_original, original);
  set_ref(&g_py_root, root);
  set_ref(&g_py_child, child);
  set_ref(&g_py_root_done, root_done);
  g_py_epoch++;
  return PyCFunction_New(&g_call_impl_def, nullptr);
}

}  // extern "C"
#endif  // DEUT_PYTHON
