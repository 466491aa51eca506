// The data the Python side hands the page (format "deuteron-web" version 1). The server answers
// these paths; a `--html` page carries the same answers inside itself (see data.ts). The Python
// that builds them is deuteron/render/web/*.py: change both together.

/** `/api/index.json`: everything small, and the list of what can be fetched. */
export interface Index {
  format: "deuteron-web";
  version: 1;
  title: string;
  profiles: ProfileData[];
  traces: TraceRef[];
  records: RecordRef[];
  checks: CheckData[];
  explains: ExplainData[];
  /** One-line notes for the user (e.g. "the tree was pruned"). */
  notes: string[];
}

/** A calling-context tree, flattened: node 0 is ROOT; parents come before their children. */
export interface ProfileData {
  name: string; // the file's name
  source: string; // the path given on the command line
  metadata: Record<string, unknown>;
  /** Column labels exactly as `deuteron view` derives them, e.g. "time/ms", "time/%", "tflop/s". */
  columns: string[];
  /** The column the flame graph's widths follow (index into columns). */
  primary: number;
  parent: number[]; // -1 for ROOT
  name_id: number[]; // index into names
  type_id: number[]; // index into types ("function", "kernel", "state", ...)
  names: string[];
  /** Index for index with `names`: each name demangled in full, and as recorded (a C++ kernel's
   * `names` entry is its short form, `reduce_kernel<…>`). Absent in older pages. */
  full_names?: string[];
  raw_names?: string[];
  types: string[];
  /** values[column][node]: inclusive values, null where a column cannot be computed at a node. */
  values: (number | null)[][];
  /** Present for a diff (`--base`): the base profile's values of the same columns and nodes, null
   * where the node is not in the base. Nodes only in the base are in the tree with values null. */
  base?: { source: string; values: (number | null)[][] };
  /** Nodes in the file, and how many were left out (below `threshold` of ROOT's primary value). */
  total_nodes: number;
  pruned_nodes: number;
  threshold: number;
  /** The run at a glance (GPU busy share, forward/backward/optimizer, top kernels), as `deuteron view --summary`. */
  summary?: string[];
  /** Said before the view: e.g. a diff of profiles that share no frame. */
  warnings?: string[];
  /** Each node's own calls (an op's calls, a kernel's launches), null where it records none; absent
   * in a diff, in a profile without calls, and in older pages. The flat view's calls and average. */
  calls?: (number | null)[];
  /** Where to ask for what `deuteron view --advise` prints for this profile (AdviceFinding[],
   * deuteron/render/web/advice.py), after the first paint; absent in a diff and in older pages. */
  advice_url?: string;
  /** A sampled profile's frames' PC samples by stall reason (deuteron/render/web/sampling.py);
   * absent in a diff, in a profile that is not sampled, and in older pages. */
  stalls?: StallData;
  /** What a sampled profile's metadata says about the sampling; absent when it is not sampled. */
  sampling?: SamplingData;
}

/** Each frame's samples by stall reason, inclusive (a frame holds its subtree's), listed only for
 * frames with at least one stall sample. */
export interface StallData {
  /** Stall reasons as recorded, lower case ("stalled_long_scoreboard"), the run's most first. */
  reasons: string[];
  /** Node ids (of this page's tree) that have stall samples, in preorder. */
  nodes: number[];
  /** counts[j][k]: samples of nodes[j] stalled on reasons[k]. */
  counts: number[][];
  /** samples[j]: nodes[j]'s num_samples (null: not recorded; Proton's count each sample twice). */
  samples: (number | null)[];
  /** not_issued[j]: nodes[j]'s samples whose warp issued nothing (null: not recorded). */
  not_issued: (number | null)[];
  /** What a reason means and what to change (deuteron/view/hot_lines.py STALL_ADVICE). */
  meanings: Record<string, { meaning: string; change: string }>;
}

/** The sampling's settings and losses, from the profile's metadata (`pc_sampling`); null: the file
 * does not record it. */
export interface SamplingData {
  /** Whether the metadata has a `pc_sampling` section at all (Proton's files do not). */
  recorded: boolean;
  mode: string | null;
  interval_cycles: number | null;
  asked_interval: number | null;
  samples: number | null;
  dropped_samples: number | null;
  hardware_buffer_full: number | null;
  drains: number | null;
  /** Of the samples of kernels with a line table, those left on `<no source line>`. */
  unplaced_samples: number | null;
  placed_kernel_samples: number | null;
  kernels_with_lines: number | null;
  kernels_without_lines: number | null;
  samples_without_lines: number | null;
  error: string | null;
  /** The recorded program as `deuteron explain` takes it ("examples/hot_line.py --n 3"), or null. */
  program: string | null;
}

/** One finding of `deuteron view --advise`: its kind (idle, backward, fusion, copies, lines,
 * stalls, collectives, waits, ...), its message, its headline and rows as the terminal prints them. */
export interface AdviceFinding {
  kind: string;
  title: string;
  headline: string; // "[kind] title"
  evidence: {
    path: string; // as recorded: a frame path below ROOT ("a > b"), "file.py:12", a kernel, "rank 1"
    line: string; // the row as the terminal prints it (the path as the tree shows it, its numbers)
    numbers: Record<string, string | number | boolean | null>;
    names: "frame" | "line" | "kernel" | "rank" | null; // what the row names
    node: number | null; // where in this page's tree (null: nowhere, or cut by the threshold)
  }[];
}

/** A Chrome/Perfetto trace; its events are fetched from `events` (a packed binary, see Packed). */
export interface TraceRef {
  name: string;
  source: string;
  /** Lanes in display order: threads, GPU streams, then lanes inside kernels ("intra": one per
   * kernel, CTA and warp, or per interpreted program), kernel by kernel. */
  lanes: { id: number; name: string; kind: "thread" | "stream" | "intra"; intra?: IntraLane; rank?: string; role?: string }[];
  /** The training steps (deuteron/view/trace_marks.py): each [start, end], ns relative to
   * start_ns, numbered from 1; how they were found; the window the page opens on (the steady
   * steps) and the first step in it; each backward pass's host span. Absent where none is found. */
  steps?: [number, number][];
  steps_how?: string;
  step_window?: [number, number];
  steady_from?: number;
  backward?: [number, number][];
  /** Several ranks' traces joined on one clock (deuteron.view.rank_traces): how the clock was
   * decided and how exact, each rank's source and shift, and the arrows between collectives. */
  job?: { clock: string; ranks: { rank: string; source: string; host: string; shift_ns: number }[]; links: number };
  names: string[]; // event names (index: the `name` column)
  cats: string[]; // categories (index: the `cat` column)
  /** As `deuteron view` shows names, and demangled in full (index: the `name` column). */
  display_names?: string[];
  full_names?: string[];
  /** Call stacks from ROOT (index: the `stack` column; 0 is the empty one) and other args as
   * (key, value text) rows (index: the `args` column; 0: none). Absent in older pages. */
  stacks?: string[][];
  arg_sets?: [string, string][][];
  /** Stack frames shown otherwise (mangled C++ names): frame -> [short name, full demangled]. */
  frame_names?: Record<string, [string, string]>;
  count: number; // events
  flows: number; // launch -> kernel arrows
  start_ns: number; // earliest start
  end_ns: number; // latest end
  /** Packed: start (f64 ns), dur (f64 ns), name (u32), lane (u16, index into lanes), cat (u8),
   * depth (u8, nesting level within the lane), stack and args (u32, into stacks and arg_sets); flow_from_lane, flow_to_lane (u16),
   * flow_from_ns, flow_to_ns (f64). Events sorted by start. In level of detail (a big trace: `lod`
   * set), the overview: `window` over the whole trace at 4096 buckets (see `window`). */
  events: string;
  /** Level of detail only. `window?t0=&t1=&px=` (t0, t1: ns relative to start_ns; px: buckets,
   * 1..20000) answers the events of [t0, t1] packed as `events` is, plus a `count` column (u32):
   * 1 for an event; more for a merged block standing for `count` events of one lane and depth,
   * each narrower than a bucket (start: the first's, dur: to the last's end, name: the longest's,
   * stack and args 0). Flows only when few events are in the window. */
  window?: string;
  /** Level of detail only: each lane's deepest nesting level (index: lane), so every window's
   * rows have the same layout. */
  lane_depths?: number[];
  /** Level of detail only: the trace's events in all, and where the server keeps them. */
  lod?: { events: number; store: string };
}

/** What an intra-kernel lane's name says (deuteron/render/web/timeline.py intra_lane): its kernel,
 * the CTA and its SM (null for an interpreted program, which has neither), the unit ("warp",
 * "warp group", "program"; "" when the name has another shape) and the unit's number. */
export interface IntraLane {
  kernel: string;
  cta: number | null;
  sm: number | null;
  unit: string;
  index: number | null;
}

/** An access record (`deuteron check --record`): its launches; each launch is fetched on demand. */
export interface RecordRef {
  name: string;
  source: string;
  dropped_lanes: number;
  limit: number;
  launches: {
    index: number;
    kernel: string;
    grid: [number, number, number];
    programs: number;
    accesses: number; // rows
    lanes: number; // recorded element accesses
    tensors: string[];
    /** `/api/access/R/L.json`, a LaunchData. */
    url: string;
  }[];
}

export interface Site {
  file: string;
  line: number;
  function: string;
}

/** One launch's tensors, as grids binned to at most a screen's resolution on the server. */
export interface LaunchData {
  index: number;
  kernel: string;
  file: string;
  grid: [number, number, number];
  /** programs[p] = [x, y, z]: program p in run order (the `program` column of the tensors). */
  programs: [number, number, number][];
  sites: Site[];
  /** Kernel source files by path: the lines the sites point to. */
  sources: Record<string, string>;
  tensors: TensorView[];
}

/** A tensor drawn as a grid of its last two dims; leading dims are picked by `slice`. */
export interface TensorView {
  name: string;
  shape: number[];
  dtype: string;
  rows: number; // size of the second-to-last dim (1 for a 1-D tensor)
  cols: number; // size of the last dim
  /** Dims folded into the rows (all but the last) when there would be more than 1024 slices;
   * empty otherwise. */
  merged: number[];
  /** Leading dims (shape without the last two); their row-major combinations are the slices. */
  lead: number[];
  slices: number;
  /** Bins: the grid is bin_rows × bin_cols cells, each row_step × col_step elements. */
  bin_rows: number;
  bin_cols: number;
  row_step: number;
  col_step: number;
  /** Element accesses that reached this tensor's storage but fell outside its view. */
  outside: number;
  /** Findings of the check report(s) on this kernel and tensor, placed on its grid. */
  findings: PlacedFinding[];
  /** slice_urls[s]: the packed cells of slice s, or null when this page does not carry it. */
  slice_urls: (string | null)[];
}

/** Packed cells of one tensor slice: one entry per (program, bin, kind, site):
 * program (u32, index into LaunchData.programs), bin (u32, row * bin_cols + col),
 * kind (u8: 0 load, 1 store, 2 atomic; 3, 4, 5 masked-off lanes of each that point inside the
 * tensor's storage), site (i32, index into sites, -1 unknown),
 * lanes (u32, element accesses it stands for). */
export type AccessCells = {
  program: Uint32Array;
  bin: Uint32Array;
  kind: Uint8Array;
  site: Int32Array;
  lanes: Uint32Array;
};

/** One finding: the sanitizer's (`deuteron check`) or the compiler explainer's, as
 * deuteron/formats/check_json.py finding_json writes it from deuteron/model/finding.py's Finding,
 * every field under its own name (tests/render/test_finding_schema.py checks the three agree). */
export interface Finding {
  kind: string;
  severity: string;
  kernel: string;
  file: string;
  line: number | null;
  column: number | null;
  /** The example's grid program (pid). */
  program: [number, number, number] | null;
  tensor: string | null;
  /** The example lane as an index into `tensor` (its view's shape). */
  index: number[] | null;
  /** The example's launch, as the access record numbers launches (null in older reports). */
  launch: number | null;
  /** pytest ids of the tests that hit it (the first few). */
  tests: string[];
  message: string;
  /** (launch, grid program) pairs that hit it, and launches. */
  programs: number;
  launches: number;
  details: Record<string, unknown>;
}

/** A finding placed on a tensor's grid (deuteron/render/web/accesses.py PLACED_FINDING_KEYS and its
 * place). */
export type PlacedFinding = Pick<Finding, "kind" | "severity" | "message" | "line" | "program" | "index"> & {
  slice: number | null;
  /** [row, col] of its cell, or null when it lies off the grid. */
  bin: [number, number] | null;
  /** The indices of the out-of-bounds lanes (at most 256; absent in older pages): where they
   * are drawn past the tensor's edge. */
  indices?: number[][];
};

/** A compiler explainer's finding (deuteron/formats/explain_json.py EXPLAIN_FINDING_KEYS). */
export type ExplainFinding = Pick<Finding, "kind" | "line" | "message" | "severity">;

export interface CheckData {
  name: string;
  source: string;
  findings: Finding[];
  launches: number;
  programs: number;
  summary: Record<string, number>;
}

/** `deuteron explain --json`, one document. */
export interface ExplainData {
  name: string;
  source: string;
  device: string | null;
  errors: string[];
  kernels: ExplainKernel[];
}

export interface ExplainKernel {
  name: string;
  target: string;
  file: string;
  line: number; // the kernel's first source line
  num_warps: number | null;
  num_stages: number | null;
  num_ctas: number | null;
  args: string[];
  launches: number;
  grids: number[][];
  registers: number | null;
  spills: number | null;
  shared_bytes: number | null;
  occupancy: Record<string, unknown> | null;
  /** SASS instruction mix: a count per class, or per class a count per instruction. */
  sass: Record<string, number | Record<string, number>> | null;
  findings: ExplainFinding[];
  profile?: Record<string, unknown>;
  /** The kernel's source file, whole (null when it could not be read at explain time). */
  source_text: string | null;
  /** Each stage's lines and, per line, the source line it came from (null: no location). */
  stage_text: Record<string, { lines: string[]; src: (number | null)[] }>;
  /** With a sampled profile (`deuteron explain --profile`): the hot lines' advice, hottest first. */
  hot_lines?: HotLine[];
  /** With a sampled profile: the PC samples on every line of the source and of each stage. */
  heat?: KernelHeat | null;
}

/** One hot source line of a sampled kernel (deuteron/view/hot_lines.py LineAdvice). */
export interface HotLine {
  kernel: string;
  file: string;
  line: number;
  samples: number;
  /** Of the kernel's samples, 0..1. */
  share: number;
  /** The stall reason behind most of the line's samples ("stalled_mio_throttle"), null when none
   * holds enough of them to be named. */
  stall: string | null;
  stall_share: number;
  /** What the stall means and what to change ("" when no stall is named). */
  meaning: string;
  change: string;
  /** Explain's findings on the same line (their messages). */
  lints: string[];
}

/** A source line's samples and why its warps were where they were. */
export interface LineSamples {
  samples: number;
  /** Samples whose warp issued nothing. */
  not_issued: number;
  /** Samples per stall reason ("stalled_mio_throttle": n); they add up to `samples`. */
  stalls: Record<string, number>;
}

/** deuteron/explain/heat.py kernel_heat: the kernel's samples by source line and by IR line. */
export interface KernelHeat {
  /** The kernel's samples in all (lines, and PCs without one). */
  samples: number;
  /** By source line ("30"), lines without samples left out. */
  lines: Record<string, LineSamples>;
  /** Per stage, samples per IR line, aligned with stage_text[stage].lines. */
  stages: Record<string, number[]>;
  /** Per stage, how its lines got their samples: "PC" (each instruction its own) or "source line"
   * (each IR line its source line's). */
  by: Record<string, string>;
  /** Why SASS/PTX are shown by source line ("" when they are not, or there is nothing to say). */
  note: string;
}
