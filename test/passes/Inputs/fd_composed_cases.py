"""Finite-difference cases of the ops mpc imports as their ONNX definitions
(frontend/NormImporters.cpp, SelectionImporters.cpp, GridSampleImporter.cpp,
PlacementImporters.cpp (TensorScatter too), DeformConvImporter.cpp, RoiAlignImporter.cpp) and
of 1-D and 3-D pools (mpc-window1d-as-2d, mpc-pool3d-as-2d), for fd_check.py, whose helpers
composed_cases takes.
"""
import numpy as np
import onnx


def composed_cases(case, mk, n2, kinked, rng2):
    def grid_points(n, oh, ow, size, align=False, spill=0.0):
        """A GridSample grid [n, oh, ow, 2] of normalized (x, y) points whose
        pixel coordinates lie 0.15-0.85 past an integer (away from floor's
        kinks), spill of them (a fraction) beyond the image."""
        h, w = size
        pix = np.stack([rng2.integers(0, w - 1, (n, oh, ow)),
                        rng2.integers(0, h - 1, (n, oh, ow))], -1).astype(np.float64)
        pix += rng2.uniform(0.15, 0.85, pix.shape)
        out = rng2.random((n, oh, ow)) < spill
        pix[..., 0][out] += np.where(rng2.random(out.sum()) < 0.5, -w, w) * 0.6
        dims = np.array([w, h], np.float64)
        g = 2 * pix / (dims - 1) - 1 if align else (2 * pix + 1) / dims - 1
        return g.astype(np.float32)

    def without(d, key):
        return {k: v for k, v in d.items() if k != key}

    # DeformConv's operands: filters [3, 2, 2, 2], offsets [1, 2 groups * 2 *
    # 4 taps, 5, 5] that put every sampling point 0.15-0.85 past an integer
    # (floor's kinks), mask and bias.
    # (Their own generator: the other cases keep their draws.)
    _rng3 = np.random.default_rng(2)
    _whole = _rng3.integers(-2, 2, (1, 16, 5, 5)).astype(np.float64)
    DEFORM = {"F": _rng3.standard_normal((3, 2, 2, 2)).astype(np.float32),
              "O": (_whole + _rng3.uniform(0.15, 0.85, _whole.shape)).astype(np.float32),
              "B": _rng3.standard_normal(3).astype(np.float32),
              "M": _rng3.uniform(0.2, 1.0, (1, 8, 5, 5)).astype(np.float32)}

    # TensorScatter's caches and updates (their own generator too).
    _rng4 = np.random.default_rng(3)
    CACHE = {"Pc": _rng4.standard_normal((2, 2, 5, 3)).astype(np.float32),
             "Up": _rng4.standard_normal((2, 2, 3, 3)).astype(np.float32)}

    # LinearAttention's operands: B 1, T 3, two q heads over one kv head of
    # size 4 (value heads of 3) or two of each, decays exp(g) in (0.5, 0.9),
    # betas in (0.2, 0.8).
    _rng5 = np.random.default_rng(4)
    LIN = {"Q": _rng5.standard_normal((1, 3, 8)).astype(np.float32),
           "K": (0.5 * _rng5.standard_normal((1, 3, 8))).astype(np.float32),
           "V": _rng5.standard_normal((1, 3, 6)).astype(np.float32),
           "G": np.log(_rng5.uniform(0.5, 0.9, (1, 3, 8))).astype(np.float32),
           "Be": _rng5.uniform(0.2, 0.8, (1, 3, 2)).astype(np.float32),
           "S0": _rng5.standard_normal((1, 2, 4, 3)).astype(np.float32),
           # 5 tokens in chunks of 2 (FLA's chunked form): keys, per-head
           # decays, betas.
           "K5": (0.5 * _rng5.standard_normal((1, 5, 8))).astype(np.float32),
           "V5": _rng5.standard_normal((1, 5, 6)).astype(np.float32),
           "G5": np.log(_rng5.uniform(0.5, 0.9, (1, 5, 2))).astype(np.float32),
           "B5": _rng5.uniform(0.2, 0.8, (1, 5, 2)).astype(np.float32)}

    # Scan's RNN cell h = tanh(h * A + x_t), A read from the enclosing
    # graph, x read backwards (LoopImporters.cpp unrolls it).
    _rng6 = np.random.default_rng(5)
    CELL = onnx.parser.parse_graph("""
cell (float[3] h, float[3] xt) => (float[3] h2, float[3] out) {
    ha = Mul (h, A)
    pre = Add (ha, xt)
    h2 = Tanh (pre)
    out = Identity (h2)
}""")
    LOOP_CELL = onnx.parser.parse_graph("""
step (int64 i, bool c, float[3] h) => (bool c2, float[3] h2, float[3] hs) {
    c2 = Identity (c)
    row = Gather <axis = 0> (Xs, i)
    ha = Mul (h, A)
    pre = Add (ha, row)
    h2 = Tanh (pre)
    hs = Identity (h2)
}""")
    SCAN = {"H0": _rng6.standard_normal(3).astype(np.float32),
            "Xs": _rng6.standard_normal((4, 3)).astype(np.float32),
            "A": _rng6.uniform(-1, 1, 3).astype(np.float32)}

    ROIS = {"Ro": np.array([[0.3, 1.1, 9.7, 8.2], [2.2, 0.4, 5.9, 4.6],
                            [-3.1, 6.5, 15.2, 13.9]], np.float32),
            "Bi": np.array([0, 1, 1], np.int64)}

    return [
        # The ops imported as their definitions (NormImporters.cpp,
        # SelectionImporters.cpp): LRN's windows of 3 and 5 channels (of 5 and
        # 6), the L1 and L2 normalizations, MVN over
        # (N, H, W), LpPool with p 2 (padded, strided) and 3, Shrink away from
        # its kinks, ReverseSequence of lengths 3 and 1 along time.
        case("lrn", [mk("LRN", ["W"], ["Y"], size=3, alpha=0.5, beta=0.75,
                        bias=1.5)], n2(2, 5, 2, 2)),
        case("lrn_wide", [mk("LRN", ["W"], ["Y"], size=5, alpha=0.3,
                             beta=0.5)], n2(1, 6, 3, 1)),
        case("lp_norm_l2", [mk("LpNormalization", ["W"], ["Y"], axis=1, p=2)],
             n2(3, 4)),
        case("lp_norm_l1", [mk("LpNormalization", ["W"], ["Y"], axis=0, p=1)],
             kinked(3, 4)),
        case("mvn", [mk("MeanVarianceNormalization", ["W"], ["Y"])],
             n2(2, 3, 2, 3)),
        case("lp_pool_2", [mk("LpPool", ["W"], ["Y"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1], strides=[2, 2], p=2)],
             n2(1, 2, 5, 5)),
        case("lp_pool_3", [mk("LpPool", ["W"], ["Y"], kernel_shape=[2, 2],
                              p=3)], kinked(1, 2, 3, 3)),
        # (onnxruntime's double Shrink computes in float: float differences.)
        case("shrink", [mk("Shrink", ["W"], ["Y"], lambd=0.5, bias=0.2)],
             kinked(4, 5, at=(-0.5, 0.5)), fd32=True),
        case("reverse_sequence", [mk("ReverseSequence", ["W", "S"], ["Y"],
                                     batch_axis=1, time_axis=0)],
             n2(4, 2, 3), extra={"S": np.array([3, 1], np.int64)}),
        # Pools over sequences, run as 2-D ones of height 1 (mpc-window1d-as-2d).
        case("avg_pool_1d", [mk("AveragePool", ["W"], ["Y"], kernel_shape=[3],
                                pads=[1, 1], strides=[2], count_include_pad=1)],
             n2(2, 3, 7)),
        case("max_pool_1d", [mk("MaxPool", ["W"], ["Y"], kernel_shape=[2],
                                strides=[2])], n2(2, 3, 8)),
        # GridSample (GridSampleImporter.cpp): the input's gradient (bilinear,
        # zeros padding, points past the border too; nearest) and the grid's
        # (bilinear with border padding, bicubic with reflection), the grid's
        # points at least 0.15 pixel from the taps' kinks.
        case("grid_sample_x", [mk("GridSample", ["W", "G"], ["Y"])], n2(1, 2, 4, 5),
             extra={"G": grid_points(1, 3, 3, (4, 5), spill=0.3)}, opset=16),
        case("grid_sample_nearest", [mk("GridSample", ["W", "G"], ["Y"],
                                        mode="nearest")], n2(1, 2, 4, 5),
             extra={"G": grid_points(1, 3, 3, (4, 5))}, opset=16),
        case("grid_sample_grid", [mk("GridSample", ["X", "W"], ["Y"],
                                     padding_mode="border", align_corners=1)],
             grid_points(2, 2, 3, (4, 5), align=True), x=n2(2, 3, 4, 5), opset=16),
        case("grid_sample_cubic_grid", [mk("GridSample", ["X", "W"], ["Y"],
                                           mode="bicubic",
                                           padding_mode="reflection")],
             grid_points(1, 3, 2, (5, 6)), x=n2(1, 2, 5, 6), opset=16,
             eps32=3e-3),
        # AffineGrid's theta (a batched MatMul of the constant base grid).
        case("affine_grid", [mk("AffineGrid", ["W", "Sz"], ["Y"])], n2(2, 2, 3),
             extra={"Sz": np.array([2, 1, 3, 4], np.int64)}, opset=20),
        # Col2Im (PlacementImporters.cpp): overlapping 2x2 blocks (a one-hot
        # grouped ConvTranspose) and 2x2 patches with a row to spare (reshape,
        # transpose, pad); MaxUnpool at a max pool's indices; CenterCropPad
        # padding one axis and cropping the other.
        case("col2im_overlap", [mk("Col2Im", ["W", "Im", "Bl"], ["Y"])],
             n2(1, 8, 9), extra={"Im": np.array([4, 4], np.int64),
                                 "Bl": np.array([2, 2], np.int64)}, opset=18),
        case("col2im_patches", [mk("Col2Im", ["W", "Im", "Bl"], ["Y"],
                                   strides=[2, 2])],
             n2(1, 8, 4), extra={"Im": np.array([5, 4], np.int64),
                                 "Bl": np.array([2, 2], np.int64)}, opset=18),
        case("max_unpool", [mk("MaxUnpool", ["W", "I"], ["Y"], kernel_shape=[2, 2],
                               strides=[2, 2])], n2(1, 2, 2, 2),
             extra={"I": np.array([0, 3, 9, 14, 17, 19, 24, 31],
                                  np.int64).reshape(1, 2, 2, 2)}, opset=11),
        case("center_crop_pad", [mk("CenterCropPad", ["W", "Sh"], ["Y"])],
             n2(3, 5), extra={"Sh": np.array([6, 2], np.int64)}, opset=18),
        # DeformConv (DeformConvImporter.cpp), two offset groups, padded, with
        # a mask and a bias: the gradients of X, the filters (two groups), the
        # offsets (sampling points 0.15-0.85 past an integer, some outside)
        # and the mask.
        case("deform_conv_x", [mk("DeformConv", ["W", "F", "O", "B", "M"], ["Y"],
                                  pads=[1, 1, 1, 1], offset_group=2)],
             n2(1, 2, 4, 4), extra=DEFORM, opset=19),
        case("deform_conv_filter", [mk("DeformConv", ["X", "W", "O", "B", "M"],
                                       ["Y"], pads=[1, 1, 1, 1], group=2,
                                       offset_group=2)],
             n2(4, 1, 2, 2), x=n2(1, 2, 4, 4),
             extra={**without(DEFORM, "F"), "B": n2(4)}, opset=19),
        case("deform_conv_offset", [mk("DeformConv", ["X", "F", "W", "B", "M"],
                                       ["Y"], pads=[1, 1, 1, 1], offset_group=2)],
             DEFORM["O"], x=n2(1, 2, 4, 4), extra=without(DEFORM, "O"), opset=19),
        case("deform_conv_mask", [mk("DeformConv", ["X", "F", "O", "B", "W"],
                                     ["Y"], pads=[1, 1, 1, 1], offset_group=2)],
             DEFORM["M"], x=n2(1, 2, 4, 4), extra=without(DEFORM, "M"), opset=19),
        # RoiAlign (RoiAlignImporter.cpp): X's gradient through three rois of
        # two images (one past the border), averaged and max-pooled samples.
        case("roi_align_avg", [mk("RoiAlign", ["W", "Ro", "Bi"], ["Y"],
                                  output_height=2, output_width=3,
                                  sampling_ratio=2, spatial_scale=0.5)],
             n2(2, 2, 6, 7), extra=ROIS, opset=16),
        case("roi_align_max", [mk("RoiAlign", ["W", "Ro", "Bi"], ["Y"], mode="max",
                                  output_height=2, output_width=2,
                                  sampling_ratio=2)],
             n2(2, 2, 6, 7), extra=ROIS, opset=16),
        # 3-D pools, run as two 2-D ones (mpc-pool3d-as-2d): padded average
        # (the padding not counted), strided max.
        case("avg_pool_3d", [mk("AveragePool", ["W"], ["Y"],
                                kernel_shape=[2, 2, 3], pads=[1, 0, 1, 1, 1, 1],
                                strides=[1, 2, 2])], n2(1, 2, 3, 4, 5)),
        case("max_pool_3d", [mk("MaxPool", ["W"], ["Y"], kernel_shape=[2, 2, 2],
                                strides=[2, 2, 2])], n2(1, 2, 4, 4, 4)),
        # 1-D transposed convolutions, run as 2-D ones of height 1
        # (mpc-window1d-as-2d): the input's and the filters' gradients,
        # grouped, strided, padded, with output_padding (onnxruntime's
        # ConvTranspose is float only: float32 differences).
        case("conv_transpose_1d_x", [mk("ConvTranspose", ["W", "K", "Bk"], ["Y"],
                                        strides=[2], pads=[1, 0], group=2,
                                        output_padding=[1])], n2(2, 4, 5),
             extra={"K": n2(4, 3, 3), "Bk": n2(6)}, fd32=True),
        case("conv_transpose_1d_w", [mk("ConvTranspose", ["X", "W"], ["Y"],
                                        strides=[3], pads=[1, 1])], n2(3, 2, 4),
             x=n2(2, 3, 5), fd32=True),
        # TensorScatter (PlacementImporters.cpp), a KV cache's update: the
        # update's gradient where its rows land (linear, from per-batch
        # positions), the past cache's where nothing overwrote it (circular,
        # wrapping past the end).
        case("tensor_scatter_update", [mk("TensorScatter", ["Pc", "W", "Wi"],
                                          ["Y"])], CACHE["Up"],
             extra={"Pc": CACHE["Pc"], "Wi": np.array([0, 2], np.int64)},
             opset=24),
        case("tensor_scatter_past", [mk("TensorScatter", ["W", "Up", "Wi"],
                                        ["Y"], mode="circular")], CACHE["Pc"],
             extra={"Up": CACHE["Up"], "Wi": np.array([3, 1], np.int64)},
             opset=24),
        # LinearAttention (LinearAttentionImporter.cpp, its recurrence
        # unrolled): the query's gradient under gated_delta with two q heads
        # on one kv head; the per-key decays' and the past state's under
        # gated; the betas' under delta (onnxruntime's LinearAttention is
        # float only: float32 differences).
        case("linear_attention_query",
             [mk("LinearAttention", ["W", "K1", "V1", "", "G1", "B1"], ["Y", "St"],
                 q_num_heads=2, kv_num_heads=1)], LIN["Q"],
             extra={"K1": LIN["K"][..., :4], "V1": LIN["V"][..., :3],
                    "G1": LIN["G"][..., :4], "B1": LIN["Be"][..., :1]},
             opset=27),
        case("linear_attention_decay",
             [mk("LinearAttention", ["Q", "K", "V", "S0", "W"], ["Y", "St"],
                 q_num_heads=2, kv_num_heads=2, update_rule="gated")], LIN["G"],
             extra={k: LIN[k] for k in ("Q", "K", "V", "S0")}, opset=27),
        case("linear_attention_past",
             [mk("LinearAttention", ["Q", "K", "V", "W", "G"], ["Y", "St"],
                 q_num_heads=2, kv_num_heads=2, update_rule="gated")], LIN["S0"],
             extra={k: LIN[k] for k in ("Q", "K", "V", "G")}, opset=27),
        case("linear_attention_beta",
             [mk("LinearAttention", ["Q", "K", "V", "S0", "", "W"], ["Y", "St"],
                 q_num_heads=2, kv_num_heads=2, update_rule="delta",
                 scale=0.3)], LIN["Be"],
             extra={k: LIN[k] for k in ("Q", "K", "V", "S0")}, opset=27),
        # The chunked form (chunks of 2 over 5 tokens, the last padded):
        # gated_delta's gradients of the keys (which also form L's inverse)
        # and of the per-head decays, from a past state.
        case("linear_attention_chunked_k",
             [mk("LinearAttention", ["K5", "W", "V5", "S0", "G5", "B5"],
                 ["Y", "St"], q_num_heads=2, kv_num_heads=2, chunk_size=2)],
             LIN["K5"], extra={k: LIN[k] for k in ("K5", "V5", "S0", "G5", "B5")},
             opset=27),
        case("linear_attention_chunked_decay",
             [mk("LinearAttention", ["K5", "K5", "V5", "S0", "W", "B5"],
                 ["Y", "St"], q_num_heads=2, kv_num_heads=2, chunk_size=2)],
             LIN["G5"], extra={k: LIN[k] for k in ("K5", "V5", "S0", "B5")},
             opset=27),
        # Scan (LoopImporters.cpp), its body inlined per step: the sequence's
        # gradient (read backwards) and the initial state's, through the
        # stacked outputs and the final state; onnxruntime runs the float
        # body (float32 differences).
        case("scan_sequence", [mk("Scan", ["H0", "W"], ["Hn", "Y"], body=CELL,
                                  num_scan_inputs=1,
                                  scan_input_directions=[1])], SCAN["Xs"],
             extra={"H0": SCAN["H0"], "A": SCAN["A"]}, opset=16),
        case("scan_state", [mk("Scan", ["W", "Xs"], ["Y", "Hs"], body=CELL,
                               num_scan_inputs=1)], SCAN["H0"],
             extra={"Xs": SCAN["Xs"], "A": SCAN["A"]}, opset=16),
        # Loop (LoopImporters.cpp), 4 iterations unrolled: the initial
        # state's gradient through the last state and the stacked ones.
        case("loop_state", [mk("Loop", ["N4", "", "W"], ["Hn", "Hs"],
                               body=LOOP_CELL),
                            mk("ReduceSum", ["Hs", "Ax0"], ["Hsum"],
                               keepdims=0),
                            mk("Add", ["Hn", "Hsum"], ["Y"])], SCAN["H0"],
             extra={"Xs": SCAN["Xs"], "A": SCAN["A"],
                    "N4": np.array(4, np.int64),
                    "Ax0": np.array([0], np.int64)}, opset=16),
    ]
