// RUN: mpc-opt %s --canonicalize -split-input-file | FileCheck %s

// ScatterND whose index tuples enumerate every element in order (torch's
// export of `mask[..., :n] = masked` with n the whole axis, Hugging Face
// 4.38+'s padding mask) is its updates: as one constant...
// CHECK-LABEL: func.func @scatter_all_constant
// CHECK-NEXT: return %arg1
func.func @scatter_all_constant(%x: tensor<2x2xf32>, %u: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %i = mpc.constant dense<[[[0, 0], [0, 1]], [[1, 0], [1, 1]]]> : tensor<2x2x2xi64>
  %y = mpc.scatter_nd %x, %i, %u : (tensor<2x2xf32>, tensor<2x2x2xi64>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y : tensor<2x2xf32>
}

// -----

// ...or as torch builds them, too large to fold: each coordinate an
// arange expanded over the other axes, unsqueezed and concatenated.
// CHECK-LABEL: func.func @scatter_all_coordinates
// CHECK-NEXT: return %arg1
func.func @scatter_all_coordinates(%x: tensor<2x1x48x48xf32>, %u: tensor<2x1x48x48xf32>) -> tensor<2x1x48x48xf32> {
  %shape = mpc.constant dense<[2, 1, 48, 48]> : tensor<4xi64>
  %c0 = mpc.constant dense<[[[[0]]], [[[1]]]]> : tensor<2x1x1x1xi64>
  %c1 = mpc.constant dense<0> : tensor<1x1x1xi64>
  %c2 = mpc.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], [12], [13], [14], [15], [16], [17], [18], [19], [20], [21], [22], [23], [24], [25], [26], [27], [28], [29], [30], [31], [32], [33], [34], [35], [36], [37], [38], [39], [40], [41], [42], [43], [44], [45], [46], [47]]> : tensor<48x1xi64>
  %c3 = mpc.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47]> : tensor<48xi64>
  %e0 = mpc.expand %c0, %shape : (tensor<2x1x1x1xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %e1 = mpc.expand %c1, %shape : (tensor<1x1x1xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %e2 = mpc.expand %c2, %shape : (tensor<48x1xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %e3 = mpc.expand %c3, %shape : (tensor<48xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %u0 = mpc.unsqueeze %e0 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %u1 = mpc.unsqueeze %e1 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %u2 = mpc.unsqueeze %e2 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %u3 = mpc.unsqueeze %e3 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %i = mpc.concat %u0, %u1, %u2, %u3 {axis = -1 : i64} : (tensor<2x1x48x48x1xi64>, tensor<2x1x48x48x1xi64>, tensor<2x1x48x48x1xi64>, tensor<2x1x48x48x1xi64>) -> tensor<2x1x48x48x4xi64>
  %y = mpc.scatter_nd %x, %i, %u : (tensor<2x1x48x48xf32>, tensor<2x1x48x48x4xi64>, tensor<2x1x48x48xf32>) -> tensor<2x1x48x48xf32>
  return %y : tensor<2x1x48x48xf32>
}

// ...but not with an axis's coordinates reversed.
// CHECK-LABEL: func.func @scatter_coordinates_reversed
// CHECK: mpc.scatter_nd
func.func @scatter_coordinates_reversed(%x: tensor<2x1x48x48xf32>, %u: tensor<2x1x48x48xf32>) -> tensor<2x1x48x48xf32> {
  %shape = mpc.constant dense<[2, 1, 48, 48]> : tensor<4xi64>
  %c0 = mpc.constant dense<[[[[0]]], [[[1]]]]> : tensor<2x1x1x1xi64>
  %c1 = mpc.constant dense<0> : tensor<1x1x1xi64>
  %c2 = mpc.constant dense<[[0], [1], [2], [3], [4], [5], [6], [7], [8], [9], [10], [11], [12], [13], [14], [15], [16], [17], [18], [19], [20], [21], [22], [23], [24], [25], [26], [27], [28], [29], [30], [31], [32], [33], [34], [35], [36], [37], [38], [39], [40], [41], [42], [43], [44], [45], [46], [47]]> : tensor<48x1xi64>
  %c3 = mpc.constant dense<[47, 46, 45, 44, 43, 42, 41, 40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]> : tensor<48xi64>
  %e0 = mpc.expand %c0, %shape : (tensor<2x1x1x1xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %e1 = mpc.expand %c1, %shape : (tensor<1x1x1xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %e2 = mpc.expand %c2, %shape : (tensor<48x1xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %e3 = mpc.expand %c3, %shape : (tensor<48xi64>, tensor<4xi64>) -> tensor<2x1x48x48xi64>
  %u0 = mpc.unsqueeze %e0 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %u1 = mpc.unsqueeze %e1 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %u2 = mpc.unsqueeze %e2 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %u3 = mpc.unsqueeze %e3 {axes = array<i64: 4>} : (tensor<2x1x48x48xi64>) -> tensor<2x1x48x48x1xi64>
  %i = mpc.concat %u0, %u1, %u2, %u3 {axis = -1 : i64} : (tensor<2x1x48x48x1xi64>, tensor<2x1x48x48x1xi64>, tensor<2x1x48x48x1xi64>, tensor<2x1x48x48x1xi64>) -> tensor<2x1x48x48x4xi64>
  %y = mpc.scatter_nd %x, %i, %u : (tensor<2x1x48x48xf32>, tensor<2x1x48x48x4xi64>, tensor<2x1x48x48xf32>) -> tensor<2x1x48x48xf32>
  return %y : tensor<2x1x48x48xf32>
}

// -----

// Kept: coordinates swapped (a transpose, not the identity), one tuple
// short of every element, and a reduction.
// CHECK-LABEL: func.func @scatter_kept
// CHECK-COUNT-3: mpc.scatter_nd
func.func @scatter_kept(%x: tensor<2x2xf32>, %u: tensor<2x2xf32>, %v: tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %swapped = mpc.constant dense<[[[0, 0], [1, 0]], [[0, 1], [1, 1]]]> : tensor<2x2x2xi64>
  %y0 = mpc.scatter_nd %x, %swapped, %u : (tensor<2x2xf32>, tensor<2x2x2xi64>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %short = mpc.constant dense<[[0, 0], [1, 1]]> : tensor<2x2xi64>
  %y1 = mpc.scatter_nd %x, %short, %v : (tensor<2x2xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<2x2xf32>
  %all = mpc.constant dense<[[[0, 0], [0, 1]], [[1, 0], [1, 1]]]> : tensor<2x2x2xi64>
  %y2 = mpc.scatter_nd %x, %all, %u {reduction = "add"} : (tensor<2x2xf32>, tensor<2x2x2xi64>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %y0, %y1, %y2 : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// -----

// A slice keeping every element in order and an expand to its own shape
// are their inputs; a reversing slice of the whole axis is kept.
// CHECK-LABEL: func.func @identity_views
// CHECK-NOT: mpc.expand
// CHECK: %[[R:.*]] = mpc.slice %arg0
// CHECK: return %arg0, %arg0, %[[R]]
func.func @identity_views(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %zero = mpc.constant dense<0> : tensor<1xi64>
  %four = mpc.constant dense<4> : tensor<1xi64>
  %last = mpc.constant dense<-1> : tensor<1xi64>
  %axis = mpc.constant dense<1> : tensor<1xi64>
  %one = mpc.constant dense<1> : tensor<1xi64>
  %back = mpc.constant dense<-5> : tensor<1xi64>
  %shape = mpc.constant dense<[2, 4]> : tensor<2xi64>
  %s = mpc.slice %x, %zero, %four axes %axis steps %one : (tensor<2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  %e = mpc.expand %x, %shape : (tensor<2x4xf32>, tensor<2xi64>) -> tensor<2x4xf32>
  %r = mpc.slice %x, %last, %back axes %axis steps %last : (tensor<2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x4xf32>
  return %s, %e, %r : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Integer Splits of constants fold (torch 1.13's repeat_interleave splits
// its repeats to build an Expand's shape): a splat's parts are splats, a
// 1-D constant's its runs; a float constant or a Split of a value is kept.
// CHECK-LABEL: func.func @split_constants
// CHECK-DAG: %[[A:.*]] = mpc.constant dense<2> : tensor<1xi64>
// CHECK-DAG: %[[B:.*]] = mpc.constant dense<[3, 4]> : tensor<2xi64>
// CHECK-DAG: %[[C:.*]] = mpc.constant dense<7> : tensor<2xi64>
// CHECK: %[[F:.*]]:2 = mpc.split %{{.*}} {{.*}} : (tensor<2xf32>)
// CHECK: %[[X:.*]]:2 = mpc.split %arg0
// CHECK: return %[[A]], %[[B]], %[[C]], %[[C]], %[[F]]#0, %[[X]]#1
func.func @split_constants(%x: tensor<2xi64>) -> (tensor<1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<1xf32>, tensor<1xi64>) {
  %runs = mpc.constant dense<[2, 3, 4]> : tensor<3xi64>
  %sevens = mpc.constant dense<7> : tensor<4xi64>
  %floats = mpc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a:2 = mpc.split %runs {axis = 0 : i64, num_outputs = 2 : i64, split = array<i64: 1, 2>} : (tensor<3xi64>) -> (tensor<1xi64>, tensor<2xi64>)
  %s:2 = mpc.split %sevens {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<4xi64>) -> (tensor<2xi64>, tensor<2xi64>)
  %f:2 = mpc.split %floats {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<2xf32>) -> (tensor<1xf32>, tensor<1xf32>)
  %v:2 = mpc.split %x {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<2xi64>) -> (tensor<1xi64>, tensor<1xi64>)
  return %a#0, %a#1, %s#0, %s#1, %f#0, %v#1 : tensor<1xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<1xf32>, tensor<1xi64>
}

// -----

// F.pad's pads as torch 1.13 exports them: cat(pads, zeros) viewed [n, 2],
// reversed pairwise by a Slice of step -1, transposed, flattened: every
// step folds (Swin's, MobileBERT's and Funnel's pads were refused as not
// constant).
// CHECK-LABEL: func.func @pads
// CHECK: %[[P:.*]] = mpc.constant dense<[0, 0, 0, 0, 0, 0, 3, 1]> : tensor<8xi64>
// CHECK: return %[[P]]
func.func @pads() -> tensor<8xi64> {
  %given = mpc.constant dense<[0, 1, 0, 3, 0, 0, 0, 0]> : tensor<8xi64>
  %pairs = mpc.constant dense<[-1, 2]> : tensor<2xi64>
  %flat = mpc.constant dense<-1> : tensor<1xi64>
  %start = mpc.constant dense<-1> : tensor<1xi64>
  %end = mpc.constant dense<-9223372036854775807> : tensor<1xi64>
  %axis = mpc.constant dense<0> : tensor<1xi64>
  %step = mpc.constant dense<-1> : tensor<1xi64>
  %v = mpc.reshape %given, %pairs : (tensor<8xi64>, tensor<2xi64>) -> tensor<4x2xi64>
  %r = mpc.slice %v, %start, %end axes %axis steps %step : (tensor<4x2xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x2xi64>
  %t = mpc.transpose %r {perm = array<i64: 1, 0>} : (tensor<4x2xi64>) -> tensor<2x4xi64>
  %p = mpc.reshape %t, %flat : (tensor<2x4xi64>, tensor<1xi64>) -> tensor<8xi64>
  return %p : tensor<8xi64>
}

// -----

// A shape computed in floats and cast to an integer (MobileViT's
// interpolate size, ceil(0.5) * 2): evaluated in FP32 for the integer; the
// float values themselves stay unfolded, as does a cast of a float input.
// CHECK-LABEL: func.func @float_shape
// CHECK-DAG: %[[TWO:.*]] = mpc.constant dense<2> : tensor<i64>
// CHECK-DAG: %[[NEG:.*]] = mpc.constant dense<-3> : tensor<i64>
// CHECK-DAG: %[[F:.*]] = mpc.mul
// CHECK-DAG: %[[X:.*]] = mpc.cast %arg0
// CHECK: return %[[TWO]], %[[NEG]], %[[F]], %[[X]]
func.func @float_shape(%x: tensor<f32>) -> (tensor<i64>, tensor<i64>, tensor<f32>, tensor<i64>) {
  %half = mpc.constant dense<5.000000e-01> : tensor<f32>
  %two = mpc.constant dense<2.000000e+00> : tensor<f32>
  %seven = mpc.constant dense<7> : tensor<i64>
  %c = mpc.ceil %half : (tensor<f32>) -> tensor<f32>
  %m = mpc.mul %c, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %i = mpc.cast %m : (tensor<f32>) -> tensor<i64>
  %s = mpc.cast %seven : (tensor<i64>) -> tensor<f32>
  %d = mpc.div %s, %two : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %n = mpc.neg %d : (tensor<f32>) -> tensor<f32>
  %j = mpc.cast %n : (tensor<f32>) -> tensor<i64>
  %k = mpc.cast %x : (tensor<f32>) -> tensor<i64>
  return %i, %j, %m, %k : tensor<i64>, tensor<i64>, tensor<f32>, tensor<i64>
}

// -----

// A view back to what the view before it read is that value (CLIP's and
// BART's scores viewed merged and as heads again between their masks); a
// view of a view to another shape stays.
// CHECK-LABEL: func.func @view_back
// CHECK: %[[O:.*]] = mpc.reshape %{{.*}}, %{{.*}} : (tensor<8x4x4xf32>, tensor<2xi64>) -> tensor<32x4xf32>
// CHECK: return %arg0, %[[O]]
func.func @view_back(%x: tensor<2x4x4x4xf32>) -> (tensor<2x4x4x4xf32>, tensor<32x4xf32>) {
  %merged = mpc.constant dense<[8, 4, 4]> : tensor<3xi64>
  %heads = mpc.constant dense<[2, 4, 4, 4]> : tensor<4xi64>
  %rows = mpc.constant dense<[32, 4]> : tensor<2xi64>
  %m = mpc.reshape %x, %merged : (tensor<2x4x4x4xf32>, tensor<3xi64>) -> tensor<8x4x4xf32>
  %h = mpc.reshape %m, %heads : (tensor<8x4x4xf32>, tensor<4xi64>) -> tensor<2x4x4x4xf32>
  %o = mpc.reshape %m, %rows : (tensor<8x4x4xf32>, tensor<2xi64>) -> tensor<32x4xf32>
  return %h, %o : tensor<2x4x4x4xf32>, tensor<32x4xf32>
}

// -----

// torch 2's mask functions and'ed with a true scalar (Hugging Face 5's
// and_masks over its causal and padding functions): And with all true and
// Or with all false are the other operand; a float constant cast to bool
// (1.0, NaN: true; 0.0: false) folds.
// CHECK-LABEL: func.func @bool_identities
// CHECK-NEXT: return %arg0, %arg0, %arg1
func.func @bool_identities(%m: tensor<1x1x4x4xi1>, %p: tensor<2x1x1x4xi1>) -> (tensor<1x1x4x4xi1>, tensor<1x1x4x4xi1>, tensor<2x1x1x4xi1>) {
  %one = mpc.constant dense<1.000000e+00> : tensor<f32>
  %true = mpc.cast %one : (tensor<f32>) -> tensor<i1>
  %zero = mpc.constant dense<0.000000e+00> : tensor<f32>
  %false = mpc.cast %zero : (tensor<f32>) -> tensor<i1>
  %a = mpc.and %true, %m : (tensor<i1>, tensor<1x1x4x4xi1>) -> tensor<1x1x4x4xi1>
  %o = mpc.or %m, %false : (tensor<1x1x4x4xi1>, tensor<i1>) -> tensor<1x1x4x4xi1>
  %trues = mpc.constant dense<true> : tensor<2x1x1x4xi1>
  %b = mpc.and %p, %trues : (tensor<2x1x1x4xi1>, tensor<2x1x1x4xi1>) -> tensor<2x1x1x4xi1>
  return %a, %o, %b : tensor<1x1x4x4xi1>, tensor<1x1x4x4xi1>, tensor<2x1x1x4xi1>
}

// -----

// And with true where the other operand broadcasts to a larger shape is
// not that operand: kept. A NaN cast to bool is true.
// CHECK-LABEL: func.func @bool_identity_broadcast_kept
// CHECK-DAG: %[[T:.*]] = mpc.constant dense<true> : tensor<1x1x4x4xi1>
// CHECK-DAG: %[[NAN:.*]] = mpc.constant dense<true> : tensor<i1>
// CHECK: %[[A:.*]] = mpc.and %arg0, %[[T]]
// CHECK: return %[[A]], %[[NAN]]
func.func @bool_identity_broadcast_kept(%p: tensor<2x1x1x4xi1>) -> (tensor<2x1x4x4xi1>, tensor<i1>) {
  %trues = mpc.constant dense<true> : tensor<1x1x4x4xi1>
  %a = mpc.and %p, %trues : (tensor<2x1x1x4xi1>, tensor<1x1x4x4xi1>) -> tensor<2x1x4x4xi1>
  %nan = mpc.constant dense<0x7FC00000> : tensor<f32>
  %t = mpc.cast %nan : (tensor<f32>) -> tensor<i1>
  return %a, %t : tensor<2x1x4x4xi1>, tensor<i1>
}
