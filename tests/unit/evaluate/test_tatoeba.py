import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from support import SHARED

from xlsent.evaluate.tatoeba import (
    TatoebaError,
    dap_text,
    evaluate,
    fetch,
    read_pairs,
    tatoeba_files,
)

TATOEBA = SHARED / "tatoeba" / "v1"
needs_tatoeba = pytest.mark.skipif(
    not TATOEBA.is_dir(), reason=f"the LASER Tatoeba files are not at {TATOEBA}"
)


def write_laser(directory: Path, iso3: str, xx: list[str], en: list[str]) -> None:
    (directory / f"tatoeba.{iso3}-eng.{iso3}").write_text("".join(f"{s}\n" for s in xx))
    (directory / f"tatoeba.{iso3}-eng.eng").write_text("".join(f"{s}\n" for s in en))


def unit(degrees: float, length: float = 1.0) -> np.ndarray:
    return length * np.array([np.cos(np.deg2rad(degrees)), np.sin(np.deg2rad(degrees))])


def test_worked_example(tmp_path):
    # Vectors on a circle, so cosine similarity ranks by angle difference (all under 180°).
    # English at 0°, 60°, -60°; Kazakh at 10°, 40°, 70°. Lengths differ to show they do not count.
    # kk→en: 10° → 0° (right), 40° → 60° (right), 70° → 60° (wrong): 2/3.
    # en→kk: 0° → 10° (right), 60° → 70° (wrong), -60° → 10° (wrong): 1/3.
    angles = {"bir": 10, "eki": 40, "üsh": 70, "one": 0, "two": 60, "three": -60}
    vectors = {s: unit(a, length=1 + i) for i, (s, a) in enumerate(angles.items())}
    write_laser(tmp_path, "kaz", ["bir", "eki", "üsh"], ["one", "two", "three"])
    calls = []

    def encode(sentences, lang):
        calls.append(sentences)
        return np.stack([vectors[s] for s in sentences])

    rows = evaluate(encode, tmp_path, ["kk"])
    assert calls == [["bir", "eki", "üsh"], ["one", "two", "three"]]
    assert [(r["lang"], r["direction"], r["metric"], r["n"]) for r in rows] == [
        ("kk", "xx2en", "accuracy", 3),
        ("kk", "en2xx", "accuracy", 3),
        ("kk", "mean", "accuracy", 3),
    ]
    assert [r["value"] for r in rows] == pytest.approx([200 / 3, 100 / 3, 50.0])


def test_dap_text_removes_the_quotes_after_stripping_the_line():
    # DAP's gen_tatoeba_pair.py: strip(), tab → space, then every `"` removed; the spaces
    # beside a quote stay, typographic quotes too.
    assert dap_text('"Wer ist es?" "Es ist deine Mutter."') == "Wer ist es? Es ist deine Mutter."
    assert dap_text(' "Vertraue mir",\tsagte er. ') == "Vertraue mir, sagte er."
    assert dap_text('อย่าทำเป็น " หมาหวงก้าง "') == "อย่าทำเป็น  หมาหวงก้าง "
    assert (
        dap_text("„Was ist los?“ fragte das Kaninchen.") == "„Was ist los?“ fragte das Kaninchen."
    )


def test_the_text_is_one_of_the_schemas(tmp_path):
    write_laser(tmp_path, "kaz", ['"Сәлем!"'], ['"Hello!"'])
    assert read_pairs(tmp_path, "kk") == (['"Сәлем!"'], ['"Hello!"'])
    assert read_pairs(tmp_path, "kk", "dap") == (["Сәлем!"], ["Hello!"])
    with pytest.raises(ValueError, match="text is one of laser, dap, not 'xtreme'"):
        read_pairs(tmp_path, "kk", "xtreme")


@needs_tatoeba
@pytest.mark.shared
def test_dap_text_of_real_lines_loses_its_ascii_quotes_only():
    laser_xx, laser_en = read_pairs(TATOEBA, "de")
    xx, en = read_pairs(TATOEBA, "de", text="dap")
    # Line 261 of tatoeba.deu-eng.*, quoted on both sides.
    assert (laser_xx[260], laser_en[260]) == (
        '"Wer ist es?" "Es ist deine Mutter."',
        '"Who is it?" "It\'s your mother."',
    )
    assert (xx[260], en[260]) == (
        "Wer ist es? Es ist deine Mutter.",
        "Who is it? It's your mother.",
    )
    # Line 259: German's typographic quotes are not ASCII quotes; the English ones go.
    assert (xx[258], en[258]) == (
        "„Wer rastet, der rostet“ ist ein Sprichwort.",
        "A rolling stone gathers no moss is a proverb.",
    )
    # Every other line is read as it stands: the files hold no tab and no space at an end.
    before, after = laser_xx + laser_en, xx + en
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == [i for i, line in enumerate(before) if '"' in line]
    assert len(changed) == 32 + 44  # German lines and English lines with a `"`


def test_all_files_checked_before_encoding(tmp_path):
    write_laser(tmp_path, "kaz", ["bir"], ["one"])

    def encode(sentences, lang):
        raise AssertionError("encoded before every file was checked")

    with pytest.raises(FileNotFoundError, match=r"tatoeba\.kat-eng\.kat"):
        evaluate(encode, tmp_path, ["kk", "ka"])


def test_encoder_must_return_one_row_per_sentence(tmp_path):
    write_laser(tmp_path, "kaz", ["bir", "eki"], ["one", "two"])
    with pytest.raises(ValueError, match="one row per sentence"):
        evaluate(lambda sentences, lang: np.ones((1, 2)), tmp_path, ["kk"])


@needs_tatoeba
@pytest.mark.shared
# Macrolanguages whose files name the individual language, and languages only evaluated
# (no ISO 639-1 code: LASER's code is theirs).
@pytest.mark.parametrize(
    ("lang", "iso3"),
    [("zh", "cmn"), ("sw", "swh"), ("fa", "pes"), ("lv", "lvs"), ("ms", "zsm"), ("ast", "ast")],
)
def test_laser_names_on_real_files(lang, iso3):
    xx, en = tatoeba_files(TATOEBA, lang)
    assert (xx.name, en.name) == (f"tatoeba.{iso3}-eng.{iso3}", f"tatoeba.{iso3}-eng.eng")


def test_missing_file_names_path_and_fix(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        tatoeba_files(tmp_path, "kk")
    message = str(err.value)
    assert str(tmp_path / "tatoeba.kaz-eng.kaz") in message
    assert "evaluate.tatoeba.languages" in message
    assert "evaluate.tatoeba.dir" in message


def test_english_side_missing(tmp_path):
    (tmp_path / "tatoeba.kaz-eng.kaz").write_text("bir\n")
    with pytest.raises(FileNotFoundError, match=r"tatoeba\.kaz-eng\.eng"):
        read_pairs(tmp_path, "kk")


def test_line_count_mismatch_names_both_files(tmp_path):
    write_laser(tmp_path, "kaz", ["bir", "eki"], ["one"])
    with pytest.raises(TatoebaError) as err:
        read_pairs(tmp_path, "kk")
    assert str(tmp_path / "tatoeba.kaz-eng.kaz") in str(err.value)
    assert str(tmp_path / "tatoeba.kaz-eng.eng") in str(err.value)


def test_invalid_utf8_names_file_and_line(tmp_path):
    write_laser(tmp_path, "kaz", ["bir", "eki"], ["one", "two"])
    (tmp_path / "tatoeba.kaz-eng.eng").write_bytes(b"one\ntw\xff\n")
    with pytest.raises(TatoebaError, match=r"tatoeba\.kaz-eng\.eng:2 is not valid UTF-8"):
        read_pairs(tmp_path, "kk")


def test_reads_lines_without_endings(tmp_path):
    (tmp_path / "tatoeba.kaz-eng.kaz").write_bytes("Сәлем!\r\nРақмет\n".encode())
    (tmp_path / "tatoeba.kaz-eng.eng").write_bytes(b"Hello!\r\nThanks")  # no final newline
    assert read_pairs(tmp_path, "kk") == (["Сәлем!", "Рақмет"], ["Hello!", "Thanks"])


DIM = 1 << 13


def char_ngrams(sentence: str) -> Counter:
    text = f" {sentence.lower()} "
    return Counter(text[i : i + n] for n in (2, 3, 4) for i in range(len(text) - n + 1))


def tfidf_encoder(corpus: list[str]):
    """Character 2–4-gram tf-idf hashed into DIM buckets, idf from `corpus`."""

    def counts(sentence):
        row = np.zeros(DIM)
        for gram, count in char_ngrams(sentence).items():
            row[zlib.crc32(gram.encode()) % DIM] += count
        return row

    document_frequency = sum((counts(s) > 0).astype(float) for s in corpus)
    idf = np.log((1 + len(corpus)) / (1 + document_frequency)) + 1
    return lambda sentences, lang: np.stack([counts(s) * idf for s in sentences])


@needs_tatoeba
@pytest.mark.shared
def test_real_data_smoke():
    accuracy = {}
    for lang in ("kk", "de"):
        xx, en = read_pairs(TATOEBA, lang)
        rows = evaluate(tfidf_encoder(xx + en), TATOEBA, [lang])
        accuracy[lang] = {r["direction"]: r["value"] for r in rows}
    rng = np.random.default_rng(0)
    random_rows = evaluate(lambda s, lang: rng.standard_normal((len(s), 64)), TATOEBA, ["de"])
    accuracy["de (random)"] = {r["direction"]: r["value"] for r in random_rows}
    print(accuracy)
    for lang in ("kk", "de"):
        for value in accuracy[lang].values():
            assert 1 < value < 100
    assert accuracy["de"]["mean"] > accuracy["de (random)"]["mean"]


def test_fetch_downloads_only_missing_files_in_the_laser_layout(tmp_path, static_server):
    base_url, served = static_server
    texts = {"kaz": "Сәлем!\nРақмет.\n", "swh": "Habari!\nAsante.\n"}
    for iso3, text in texts.items():
        (served / f"tatoeba.{iso3}-eng.{iso3}").write_text(text)
        (served / f"tatoeba.{iso3}-eng.eng").write_text("Hello!\nThank you.\n")
    local = tmp_path / "tatoeba"
    local.mkdir()
    (local / "tatoeba.kaz-eng.eng").write_text("Hello!\nThank you.\n")  # already there

    fetched = fetch(base_url, local, ["kk", "sw"])

    assert sorted(p.name for p in fetched) == [
        "tatoeba.kaz-eng.kaz",
        "tatoeba.swh-eng.eng",
        "tatoeba.swh-eng.swh",
    ]
    assert read_pairs(local, "sw") == (["Habari!", "Asante."], ["Hello!", "Thank you."])
    assert read_pairs(local, "kk")[0] == ["Сәлем!", "Рақмет."]
