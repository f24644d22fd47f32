"""A `.gguf` model through the RL stage on CPU: a tiny Llama written in the test with gguf.GGUFWriter
(tests/gguf_tiny.py) is loaded by `rl.models` (transformers' gguf_file= path + the plain copy) and
must reproduce the torch model it was written from; `tomforge eval` and `tomforge train` take the
file as --model."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

pytest.importorskip("torch")
pytest.importorskip("gguf")
pytest.importorskip("trl")

import torch  # noqa: E402

from tests.gguf_tiny import write_tiny_gguf  # noqa: E402
from tests.rl_data import small_release  # noqa: E402
from tomforge.flows.cli import app  # noqa: E402
from tomforge.rl import stage  # noqa: E402
from tomforge.rl.models import MARKER, load_gguf, materialize  # noqa: E402

runner = CliRunner()


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[Path, object, object, Path]:
    base = tmp_path_factory.mktemp("gguf")
    path = base / "tiny-llama.gguf"
    model, tokenizer = write_tiny_gguf(path)
    return path, model, tokenizer, small_release(base)


def test_loaded_gguf_reproduces_the_model_it_was_written_from(tiny) -> None:
    path, reference, ref_tokenizer, _ = tiny
    model, tokenizer = load_gguf(path)
    assert type(model).__name__ == "LlamaForCausalLM"
    assert not getattr(model, "is_quantized", False)  # the plain copy: save_pretrained and trainers accept it
    text = "Sally put the marble in the basket. <think>x</think><answer>box</answer>"
    ids = ref_tokenizer(text, return_tensors="pt")["input_ids"]
    assert tokenizer(text, return_tensors="pt")["input_ids"].tolist() == ids.tolist()
    assert tokenizer.chat_template == ref_tokenizer.chat_template
    with torch.no_grad():
        want, got = reference(ids).logits, model(ids).logits
    assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()


def test_materialize_converts_once_and_reuses(tiny, tmp_path: Path) -> None:
    path, reference, _, _ = tiny
    folder = Path(materialize(str(path), tmp_path))
    marker = json.loads((folder / MARKER).read_text())
    assert marker["gguf"] == path.name and len(marker["sha256"]) == 64
    assert not json.loads((folder / "config.json").read_text()).get("quantization_config")
    written = (folder / "model.safetensors").stat().st_mtime_ns
    assert Path(materialize(str(path), tmp_path)) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == written  # reused, not converted again
    assert materialize("some-org/some-model", tmp_path) == "some-org/some-model"  # ids and folders pass through
    from transformers import AutoModelForCausalLM

    reloaded = AutoModelForCausalLM.from_pretrained(folder)
    ids = torch.tensor([[5, 17, 42, 99]])
    with torch.no_grad():
        assert torch.allclose(reloaded(ids).logits, reference(ids).logits, atol=1e-5)


def test_eval_takes_a_gguf_file(tiny, tmp_path: Path, monkeypatch) -> None:
    path, _, _, release = tiny
    monkeypatch.setenv("TOMFORGE_MODEL_CACHE", str(tmp_path / "models"))
    warehouse = tmp_path / "w.duckdb"
    args = [
        "eval",
        "--model",
        str(path),
        "--dataset",
        str(release),
        "--split",
        "tomforge_gen/test",
        "--limit",
        "3",
        "--max-new-tokens",
        "4",
        "--generator",
        "hf",
        "--warehouse",
        str(warehouse),
        "--out",
        str(tmp_path / "ev"),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    con = duckdb.connect(str(warehouse), read_only=True)
    assert con.execute("SELECT DISTINCT model, label FROM eval_results").fetchall() == [(str(path), path.name)]
    assert con.execute("SELECT count(*) FROM eval_results").fetchone() == (3,)
    assert len(list((tmp_path / "models").glob(f"tiny-llama-*/{MARKER}"))) == 1


def test_train_takes_a_gguf_file(tiny, tmp_path: Path, monkeypatch) -> None:
    path, _, _, release = tiny
    monkeypatch.setenv("TOMFORGE_MODEL_CACHE", str(tmp_path / "models"))
    out = tmp_path / "rl"
    args = [
        "train",
        "--dataset",
        str(release),
        "--model",
        str(path),
        "--train",
        "tomforge_gen/train",
        "--max-steps",
        "1",
        "--num-generations",
        "2",
        "--batch-size",
        "4",
        "--max-completion-length",
        "6",
        "--no-bf16",
        "--output-dir",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "trained 1 steps" in result.output
    saved = json.loads((out / "config.json").read_text())
    assert saved["architectures"] == ["LlamaForCausalLM"] and not saved.get("quantization_config")


def test_missing_gguf_and_verl_give_one_line_errors(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    result = runner.invoke(app, ["eval", "--model", str(missing), "--dataset", str(tmp_path), "--generator", "hf"])
    assert result.exit_code == 2  # the release folder is checked first: no data/ folder
    release = small_release(tmp_path / "r")
    result = runner.invoke(
        app,
        [
            "eval",
            "--model",
            str(missing),
            "--dataset",
            str(release),
            "--generator",
            "hf",
            "--split",
            "tomforge_gen/test",
            "--warehouse",
            str(tmp_path / "w.duckdb"),
        ],
    )
    assert result.exit_code == 2 and "nope.gguf: gguf file not found" in result.output
    assert len(result.output.strip().splitlines()) == 1
    with pytest.raises(ValueError, match="trl backend"):
        stage.make_settings("verl", str(missing))
