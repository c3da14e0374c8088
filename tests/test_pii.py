"""The `pii` stage (stages/pii.py): each kind masked with its placeholder and counted, look-alikes kept, the
private-range setting, placeholders from the config, only alive rows changed, and one belt run with the stage
listed: `pii_replacements` in docs/ and the ledger whole."""

from __future__ import annotations

import json
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import ROOT
from pipeline import belt, spec
from pipeline.passes import filtering
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from stages.pii import PiiMasker, pii_spans
from stages.warc_read import DOCUMENT_SCHEMA

SAMPLE = ROOT / "configs" / "crawl_sample.yaml"


@pytest.mark.parametrize(
    "text, masked",
    [
        ("Write to jane.doe@mail.example.org.", "Write to <EMAIL>."),
        ("(zoë+news@bücher.de) or <a_b-9@x.co.uk>", "(<EMAIL>) or <<EMAIL>>"),
        ("from 93.184.216.34:8080 and http://151.101.1.69/x", "from <IP_ADDRESS>:8080 and http://<IP_ADDRESS>/x"),
        ("range 81.2.69.160-81.2.69.170", "range <IP_ADDRESS>-<IP_ADDRESS>"),  # a hyphen and a number: a range
        ("Tel.-Nr. 030 1234 5678, Telefonnummer: 089 123 456 78", "Tel.-Nr. <PHONE>, Telefonnummer: <PHONE>"),
        ("host [2606:4700:4700::1111]:443, 2a00:1450:4001:81C:0:0:0:200E.", "host [<IP_ADDRESS>]:443, <IP_ADDRESS>."),
        ("Tel.: +44 (0)20 7946 0958; +1 (555) 123-4567, +8613812345678", "Tel.: <PHONE>; <PHONE>, <PHONE>"),
        ("(555) 123-4567, 555.123.4567 or 1-800-555-0199.", "<PHONE>, <PHONE> or <PHONE>."),
        ("UK 020 7946 0958, DE 089 / 123 456 78, FR 01 23 45 67 89", "UK <PHONE>, DE <PHONE>, FR <PHONE>"),
    ],
)
def test_each_kind_is_masked_with_its_placeholder_and_counted(text, masked):
    assert PiiMasker().mask(text) == (masked, masked.count("<") - text.count("<"))


@pytest.mark.parametrize(
    "text",
    [
        "version 1.2.3.4, v1.2.3.4, release 4.3.2.1, 1.2.3.4.5, Chrome/120.0.0.0, see section 2.1.3.4",
        "Python 3.11.4.1, a heading 4.2.1.3 Results, 8.8.8.8",  # numbers below 16: a version (or a resolver)
        "256.1.1.1, 192.168.001.001, 12:30:45, 00:1A:2B:3C:4D:5E, std::vector, a::b::c",
        "15.01.2023, 2023-01-15, 01/15/2023 10:30, 1999-2005, 1914-1918-1939, 9:00-17:30",
        "ISBN 978-3-16-148410-0, ISBN 0-306-40615-2, ISSN 0740-7874, $1,234.56, € 1.234,56, +12.5%",
        "40.7128, -74.0060; serial 0123-4567-89, SKU 555-123-4567, SSN 123-45-6789, ZIP 94720-1234",
        "5551234567, IBAN DE89 3704 0044 0532 0130 00, 4111 1111 1111 1111, population 8 336 817",
        "logo@2x.png, sprite@2x.PNG, @username, user@localhost, Anonymous@12.15, npm i @babel/core",
        "linux 5.15.0.91-generic, 5.15.0.91-generic, reservation 0123 4567 89, booking no. 030 1234 5678",
        "Tomcat 18.7.56.135-1ubuntu1, ESXi 30.27.198.68+dfsg, 21.6.161.239~bpo11, Article 30.21.7.23, para 39.7.6.3",
        "Kd.-Nr. 0467 808 966, Kundennummer 030 1234 5678",  # German identifiers: a word ending in Nr. or nummer
    ],
)
def test_look_alikes_stay_text(text):
    assert PiiMasker().mask(text) == (text, 0)


def test_private_and_reserved_addresses_are_masked_only_when_asked():
    text = "10.0.0.1, 192.168.1.1, 127.0.0.1, 203.0.113.5, ::1, fe80::1, 2001:db8::1 and 151.101.1.69"
    assert PiiMasker().mask(text)[1] == 1
    masked, count = PiiMasker(mask_private_ips=True).mask(text)
    assert count == 8 and masked == ", ".join(["<IP_ADDRESS>"] * 7) + " and <IP_ADDRESS>"


def test_a_number_that_runs_on_into_the_next_is_cut_where_it_ends():
    assert PiiMasker().mask("Phone: 030-7876447 4111 1111 1111 1111")[0] == "Phone: <PHONE> 4111 1111 1111 1111"


def test_placeholders_and_kinds_come_from_the_config(tmp_path):
    config = load_config(
        str(SAMPLE),
        output=str(tmp_path / "out"),
        overrides=[
            "stages=[extract, pii]",
            "pii.kinds=[email, phone]",
            "pii.email_placeholder='[email]'",
            "pii.phone_placeholder=''",
        ],
    )
    (masker,) = [stage for stage in spec.document_stages(config) if isinstance(stage, PiiMasker)]
    assert masker.mask("a@b.org at 151.101.1.69, +49 30 12345678.") == ("[email] at 151.101.1.69, .", 2)


@pytest.mark.parametrize("kinds", ["[]", "[email, email]", "[email, passport]"])
def test_wrong_kinds_are_one_line(tmp_path, kinds):
    overrides = [f"pii.kinds={kinds}", "stages=[extract, pii, language]"]  # checked where the belt runs pii
    with pytest.raises(ConfigError, match=r"pii.kinds: expected a non-empty list of distinct kinds"):
        load_config(str(SAMPLE), output=str(tmp_path / "out"), overrides=overrides)


def batch(texts: list, stages: list) -> pa.Table:
    rows: dict[str, list] = {name: [None] * len(texts) for name in DOCUMENT_SCHEMA.names}
    rows.update(order=list(range(len(texts))), id=[f"d{i}" for i in range(len(texts))], text=texts, stage=stages)
    return pa.Table.from_pydict(rows, schema=DOCUMENT_SCHEMA)


def test_only_alive_rows_change_and_empty_texts_pass():
    before = batch(["mail a@b.org", "mail c@d.org", None, ""], [None, "quality", None, None])
    after = PiiMasker()(before)
    assert after["text"].to_pylist() == ["mail <EMAIL>", "mail c@d.org", None, ""]
    assert after["pii_replacements"].to_pylist() == [1, None, 0, 0]
    assert after["stage"].to_pylist() == [None, "quality", None, None]  # it rejects nothing


def test_a_large_non_ascii_text_is_masked_whole():
    line = "Кирилл пишет: kirill@пример.рф, звоните +7 (495) 123-45-67 — 東京 IP 93.184.216.34 🎉\n"
    masked, count = PiiMasker().mask(line * 20_000)  # about 1.7 million characters
    assert count == 60_000
    assert masked == "Кирилл пишет: <EMAIL>, звоните <PHONE> — 東京 IP <IP_ADDRESS> 🎉\n" * 20_000


def test_runs_of_digits_after_plus_signs_cost_what_they_are_long():
    """A `+` and more digits than a phone number can hold made the phone pattern try every way to split them
    into its groups (15 ms a plus sign; 300 KB took 150 s, issue 46); now a run splits one way."""
    text = ("+" + "1" * 40 + " ") * 250  # 10 KB: 4 s before
    started = time.perf_counter()
    assert pii_spans(text) == []
    assert time.perf_counter() - started < 1
    # where the run is split still gives the spans it gave
    assert pii_spans("+1 2 3 4 5 6 7-8 and +44 20 7946 0958, +4412345678901") == [(21, 37, "phone"), (39, 53, "phone")]
    assert pii_spans("+49 30 1234567 89-5 or +1 212 555 0100 1-2") == [(0, 19, "phone"), (23, 42, "phone")]


def test_spans_never_overlap_and_a_number_in_an_email_stays_the_emails():
    assert pii_spans("555-123-4567@example.com or 555-123-4567") == [(0, 24, "email"), (28, 40, "phone")]


def test_the_belt_with_pii_listed_masks_before_the_later_stages(embedded_ray, tmp_path):
    """The bundled fixture crawl (the same pages as the default belt), with the stage between language and
    quality: docs/ has pii_replacements, the ledger holds, and the kept texts hold no e-mail address."""
    config = load_config(
        str(ROOT / "configs" / "local.yaml"),
        output=str(tmp_path / "out"),
        overrides=["stages=[extract, language, pii, quality, repetition, classifier]", "packing.seq_len=128"],
    )
    manifest = belt.run(config)
    assert manifest["invariants"] and all(manifest["invariants"].values()), manifest["invariants"]
    assert list(manifest["stages"])[:4] == ["read", "extract", "language", "pii"]
    assert manifest["counts"]["rejected"].get("pii", 0) == 0
    docs = pa.concat_tables([pq.read_table(tmp_path / "out" / path) for path in manifest["outputs"]["docs"]])
    assert docs.schema.field("pii_replacements").type == pa.int64()
    counts, texts = docs["pii_replacements"].to_pylist(), docs["text"].to_pylist()
    assert all(isinstance(n, int) and n >= 0 for n in counts)
    assert all(PiiMasker().mask(text)[1] == 0 for text in texts)  # masked once, nothing left to mask
    assert sum(counts) == sum(
        text.count("<EMAIL>") + text.count("<IP_ADDRESS>") + text.count("<PHONE>") for text in texts
    )
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]["pii"]["mask_private_ips"] is False


def test_pii_settings_shape_the_fingerprint_only_where_the_stage_is_listed(tmp_path):
    def fingerprint(*overrides: str) -> str:
        config = load_config(str(SAMPLE), output=str(tmp_path / "out"), overrides=list(overrides))
        return filtering.fingerprint(config, filtering.input_files(config))

    listed = "stages=[extract, language, pii, quality]"
    assert fingerprint() == fingerprint("pii.mask_private_ips=true")  # the default belt: pii is not in it
    assert fingerprint(listed) != fingerprint(listed, "pii.mask_private_ips=true")  # a rerun redoes the pass


def test_dedup_sees_the_masked_text(embedded_ray, tmp_path):
    """Two notes that differ only in the address they give are one document once masked: exact dedup rejects
    the second."""
    body = " ".join(["The river carries sand and small stones from the mountains to the sea."] * 8)
    notes = [f"Write to {name}@example.org about it. {body}" for name in ("anna", "piotr")]
    notes.append("Something else entirely, call +44 20 7946 0958 today. " + body.replace("river", "road"))
    (tmp_path / "notes.jsonl").write_text("".join(json.dumps({"text": text}) + "\n" for text in notes))
    config = load_config(
        None,
        output=str(tmp_path / "out"),
        inputs=[str(tmp_path / "notes.jsonl")],
        overrides=[
            "stages=[pii]",
            "classifier.kind=none",
            "dedup.near=false",
            "tokenizer.vocab_size=300",
            "packing.seq_len=16",
        ],
    )
    manifest = belt.run(config)
    assert all(manifest["invariants"].values()) and manifest["counts"]["rejected_by_reason"] == {"exact_duplicate": 1}
    docs = pa.concat_tables([pq.read_table(tmp_path / "out" / path) for path in manifest["outputs"]["docs"]])
    first, other = docs["text"].to_pylist()
    assert first.startswith("Write to <EMAIL> about it.") and other.startswith("Something else entirely, call <PHONE>")
    assert docs["pii_replacements"].to_pylist() == [1, 1]
