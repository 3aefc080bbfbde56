// `pnpm bench projector [sizes…]`: the projector benchmark. It lives in the test package, which
// has the workspace libraries as dependencies; see test/projector/bench/projector-bench.ts.
import '../test/projector/bench/projector-bench.js';
