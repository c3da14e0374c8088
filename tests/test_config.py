"""Config validation: each kind of error is one line naming the key or file, exit code 2, nothing written."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import ROOT, cli
from pipeline.config import ConfigError
from pipeline.config.load import load_config
from pipeline.config.read import expand_inputs
from stages.langid import default_lid_model_path
from stages.tokens import train_bpe

SAMPLE = ROOT / "configs" / "crawl_sample.yaml"
CLASSIFIER = ROOT / "configs" / "classifier"


def write_config(tmp_path, text):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("sources: [{name: web, input: [x.warc]}]\nlanguage: {treshold: 0.5}\n", "unknown key 'language.treshold'"),
        (
            "sources: [{name: web, input: [x.warc]}]\nlanguage: {threshold: high}\n",
            "language.threshold: expected float, got str 'high'",
        ),
        ("sources: [{name: web, input: [x.warc]}]\ndedup: {shards: 2.5}\n", "dedup.shards: expected int"),
        ("sources: [{name: web, input: [x.warc]}]\nquality: {enabled: 1}\n", "quality.enabled: expected bool"),
        ("sources: [{name: web, input: [missing/*.warc.gz]}]\n", "input '"),
        ("sources: [{name: web, input: [x.warc]}]\nlanguage: {method: magic}\n", "language.method: expected one of"),
        ("sources: [{name: web, input: [x.warc]}]\nresources: {filter: {num_cpus: 0}}\n", "resources.filter: expected"),
        (
            "sources: [{name: web, input: [x.warc]}]\nresources: {encode: {cpus: 2}}\n",
            "unknown key 'resources.encode.cpus'",
        ),
        (
            "sources: [{name: web, input: [x.warc]}]\nresources: {filter: {max_retries: 3}}\n",
            "unknown key 'resources.filter.max_retries'",
        ),
        (
            "sources: [{name: web, input: [x.warc]}]\nrejects: {text: short}\n",
            "rejects.text: expected one of snippet, full, none, got 'short'",
        ),
        (
            "sources: [{name: web, input: [x.warc]}]\nray: {node_lost_timeout_s: 0}\n",
            "ray.node_lost_timeout_s: expected",
        ),
    ],
)
def test_config_errors_name_the_key_exit_2_and_write_nothing(tmp_path, text, expected):
    (tmp_path / "x.warc").write_bytes(b"")
    config = write_config(tmp_path, text + "classifier: {kind: none}\n")
    out = tmp_path / "out"
    result = cli("run", config, "--output", str(out), cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("config error: ") and expected in lines[0], result.stderr
    assert not out.exists()


def test_output_is_a_local_path_or_an_s3_uri(tmp_path):
    (tmp_path / "x.warc").write_bytes(b"")
    config = write_config(tmp_path, "sources: [{name: web, input: [x.warc]}]\nclassifier: {kind: none}\n")
    with pytest.raises(ConfigError, match="'gs://bucket/out': expected a local path or an s3:// URI"):
        load_config(config, output="gs://bucket/out")


def test_missing_input_names_the_pattern(tmp_path):
    config = write_config(tmp_path, "sources: [{name: web, input: [nowhere/*.warc.gz]}]\n")
    with pytest.raises(ConfigError, match="nowhere/\\*.warc.gz' matches no file"):
        load_config(config)


def test_missing_config_file_and_bad_override(tmp_path):
    result = cli("run", str(tmp_path / "absent.yaml"), cwd=tmp_path)
    assert result.returncode == 2 and "absent.yaml' not found" in result.stderr
    with pytest.raises(ConfigError, match="unknown key 'dedup.bogus'"):
        load_config(str(SAMPLE), overrides=["dedup.bogus=1"])


def test_overrides_and_inputs_apply(tmp_path):
    warc = tmp_path / "a.warc"
    warc.write_bytes(b"")
    config = load_config(
        str(SAMPLE),
        overrides=["language.threshold=0.9", "dedup.near=false"],
        inputs=[str(warc)],
        output=str(tmp_path / "o"),
    )
    assert config.language.threshold == 0.9 and config.dedup.near is False
    assert config.sources[0].input == [str(warc)] and config.output == str(tmp_path / "o")
    # paths in the file are relative to the config's folder, not the working directory
    assert load_config(str(SAMPLE)).classifier.good_examples == [str(ROOT / "configs" / "classifier" / "good.txt")]


def test_output_that_is_not_ours_is_refused(tmp_path):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.tex").write_text("do not delete")
    with pytest.raises(ConfigError, match="not an earlier crawlbelt output"):
        load_config(str(SAMPLE), output=str(tmp_path / "precious"))


def test_token_settings_and_curated_sources_are_checked(tmp_path):
    (tmp_path / "a.warc").write_bytes(b"")
    pq.write_table(pa.table({"text": ["a document"]}), tmp_path / "docs.parquet")
    pq.write_table(pa.table({"body": ["no text column"]}), tmp_path / "other.parquet")
    (tmp_path / "tok.json").write_text("not json")
    base = "classifier: {kind: none}\n"
    cases = [
        ("sources: [{name: web, input: [a.warc, docs.parquet], curated: true}]\n", "a.warc' is not a .parquet file"),
        ("sources: [{name: web, input: [other.parquet], curated: true}]\n", "has no string column 'text'"),
        ("sources: [{name: web, input: [other.parquet]}]\n", "has no string column 'text' (sources[0].text_field"),
        ("sources: [{name: web, input: [docs.parquet], format: csv}]\n", "sources[0].format: expected one of"),
        ("sources: [{name: web, input: [a.warc], select: {score: quality_score}}]\n", "give top_fraction, min_score"),
        (
            "sources: [{name: web, input: [a.warc], select: {score: score_edu, top_fraction: 0.5}}]\n",
            "'score_edu' is not a score the belt's stages add",
        ),
        ("sources: [{name: web, input: [a.warc], weight: -1}]\n", "sources[0].weight: expected a number >= 0"),
        ("sources: [{name: web, input: [a.warc], weight: 0}]\n", "at least one weight must be above 0"),
        ("sources: [{name: web, input: [a.warc]}]\npacking: {remainder: keep}\n", "packing.remainder: expected one of"),
        ("sources: [{name: web, input: [a.warc]}]\npacking: {seq_len: 0}\n", "packing.seq_len: expected a positive"),
        ("sources: [{name: web, input: [a.warc]}]\nmixture: {budget_tokens: 0}\n", "mixture.budget_tokens"),
        ("sources: [{name: web, input: [a.warc]}]\ntokenizer: {vocab_size: 100}\n", "at least 258"),
        ("sources: [{name: web, input: [a.warc]}]\ntokenizer: {path: tok.json}\n", "is not a tokenizer.json"),
        ("sources: [{name: web, input: [a.warc]}]\ntokenizer: {path: absent.json}\n", "not found"),
    ]
    for text, expected in cases:
        with pytest.raises(ConfigError) as error:
            load_config(write_config(tmp_path, text + base), output=str(tmp_path / "out"))
        assert expected in str(error.value), (text, str(error.value))
    train_bpe(iter(["some text"]), 300, ["<s>"]).save(str(tmp_path / "tok.json"))
    with pytest.raises(ConfigError, match="tokenizer.eos_token: '<|endoftext|>' is not in"):
        load_config(
            write_config(tmp_path, "sources: [{name: web, input: [a.warc]}]\ntokenizer: {path: tok.json}\n" + base),
            output=str(tmp_path / "out"),
        )
    with pytest.raises(ConfigError, match="inside the output folder"):
        load_config(
            write_config(tmp_path, "sources: [{name: web, input: [docs.parquet], curated: true}]\n" + base),
            output=str(tmp_path),
        )
    config = load_config(
        write_config(
            tmp_path,
            "sources: [{name: old, input: [docs.parquet], weight: 2, curated: true}]\n"
            "tokenizer: {path: tok.json, eos_token: <s>}\n" + base,
        ),
        output=str(tmp_path / "out"),
    )
    assert config.sources[0].curated and config.sources[0].weight == 2.0
    assert config.tokenizer.path == str(tmp_path / "tok.json")


@pytest.mark.parametrize(
    "overrides, expected",
    [
        (["dedup.threshold=7"], "dedup.threshold: expected a number in [0, 1], got 7.0"),
        (["dedup.threshold=-0.1"], "dedup.threshold: expected a number in [0, 1], got -0.1"),
        (["extract.timeout_s=-1"], "extract.timeout_s: expected a number above 0, got -1.0"),
        (["quality.min_words=-5"], "quality.min_words: expected a number >= 0, got -5"),
        (["quality.min_alpha_words_ratio=2"], "quality.min_alpha_words_ratio: expected a number in [0, 1], got 2.0"),
        (["quality.min_words=500", "quality.max_words=100"], "quality.max_words: expected at least quality.min_words"),
        (
            ["quality.min_mean_word_length=8", "quality.max_mean_word_length=4"],
            "quality.max_mean_word_length: expected at least quality.min_mean_word_length",
        ),
        (["repetition.dup_line_frac=1.5"], "repetition.dup_line_frac: expected a number in [0, 1]"),
        (["read.max_payload_mb=0"], "read.max_payload_mb: expected a number above 0"),
        (["extract.max_html_mb=.nan"], "extract.max_html_mb: expected a finite number"),
        (["mixture.max_passes=.inf"], "mixture.max_passes: expected a finite number"),
        (["dedup.bands=0", "dedup.rows=5"], "dedup.bands: expected a positive integer"),
        (["ray.num_cpus=0"], "ray.num_cpus: expected a positive integer, got 0"),
        (["ray.resource_wait_s=-1"], "ray.resource_wait_s: expected a number >= 0"),
        (["language.languages=english"], "language.languages: expected a list, got str 'english'"),
        (["language.languages=[xx]"], "language.languages: 'xx' is not a language of the fastText model"),
        (["language.languages=[ja]"], "language.languages: 'ja' has no stop-word list"),
        (
            ["language.method=stopwords", "language.languages=[pt]"],
            "language.languages: 'pt' is not a language of the stop-word detector",
        ),
        (
            ["classifier.kind=fasttext", "classifier.model_path=classifier/good.txt"],
            "classifier.model_path: '"
            + str(ROOT / "configs" / "classifier" / "good.txt")
            + "' is not a fastText model",
        ),
    ],
)
def test_values_out_of_range_or_unknown_are_refused(tmp_path, overrides, expected):
    with pytest.raises(ConfigError) as error:
        load_config(str(ROOT / "configs" / "local.yaml"), overrides=overrides, output=str(tmp_path / "out"))
    assert expected in str(error.value)


def test_values_that_fit_their_ranges_are_accepted(tmp_path):
    config = load_config(
        str(ROOT / "configs" / "local.yaml"),
        output=str(tmp_path / "out"),
        overrides=[
            "language.languages=[ja, de]",
            "language.method=fasttext",
            "quality.min_words=0",
            "dedup.threshold=1",
            "classifier.kind=fasttext",
            f"classifier.model_path={default_lid_model_path()}",
            "classifier.label=__label__en",
        ],
    )
    assert config.language.languages == ["ja", "de"] and config.dedup.threshold == 1.0
    short_texts_off = load_config(
        str(ROOT / "configs" / "local.yaml"),
        output=str(tmp_path / "out"),
        overrides=["language.languages=[ja]", "language.short_text_chars=0"],
    )
    assert short_texts_off.language.languages == ["ja"]


def test_model_files_are_loaded_not_only_found(tmp_path):
    train_bpe(iter(["some text"]), 300, ["<|endoftext|>"]).save(str(tmp_path / "tokenizer.json"))
    cases = [
        (
            [f"language.model_path={tmp_path / 'tokenizer.json'}"],
            f"language.model_path: '{tmp_path / 'tokenizer.json'}' is not a fastText model",
        ),
        (
            ["classifier.kind=fasttext", f"classifier.model_path={tmp_path / 'tokenizer.json'}"],
            f"classifier.model_path: '{tmp_path / 'tokenizer.json'}' is not a fastText model",
        ),
        (
            ["classifier.kind=fasttext", f"classifier.model_path={default_lid_model_path()}"],
            "classifier.label: '__label__hq' is not a label of",
        ),
        (
            [
                "classifier.kind=fasttext",
                f"classifier.model_path={default_lid_model_path()}",
                "classifier.label=__label__en",
                "classifier.threshold=3",
            ],
            "classifier.threshold: expected a probability",
        ),
    ]
    for overrides, expected in cases:
        with pytest.raises(ConfigError) as error:
            load_config(str(ROOT / "configs" / "local.yaml"), overrides=overrides, output=str(tmp_path / "out"))
        assert expected in str(error.value), (overrides, str(error.value))


@pytest.mark.parametrize(
    "content, expected",
    [
        (
            b"packing: {seq_len: 8}\npacking: {remainder: pad}\n",
            "is not valid YAML: key 'packing' given twice (line 2, column 1)",
        ),
        (
            b"sources:\n  - name: web\n    input: [a.warc]\n    name: other\n",
            "key 'name' given twice (line 4, column 5)",
        ),
        (
            b"sources: [{name: web, input: [a.warc]}]\nlanguage:\n  threshold: 0.5\n languages: [en]\n",
            "is not valid YAML: expected <block end>, but found '<block mapping start>' (line 4, column 2)",
        ),
        (
            "language: {languages: [fr]}  # fran\u00e7ais\n".encode("latin-1"),
            "is not UTF-8 text (byte 0xe7 at offset 35)",
        ),
        ((ROOT / "tests" / "fixtures" / "warc" / "crawl-00000.warc.gz").read_bytes(), "is not UTF-8 text"),
    ],
)
def test_config_files_that_are_not_clean_yaml_are_one_line(tmp_path, content, expected):
    (tmp_path / "config.yaml").write_bytes(content)
    with pytest.raises(ConfigError) as error:
        load_config(str(tmp_path / "config.yaml"), output=str(tmp_path / "out"))
    assert expected in str(error.value) and "\n" not in str(error.value)


def test_override_with_duplicate_keys_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="--set packing: value is not valid YAML .key 'seq_len' given twice"):
        load_config(str(SAMPLE), overrides=["packing={seq_len: 8, seq_len: 16}"], output=str(tmp_path / "out"))


@pytest.mark.parametrize(
    "output, expected",
    [
        ("s3:/bucket/x", "output 's3:/bucket/x': expected a local path or an s3:// URI"),
        ("s3:bucket", "output 's3:bucket': expected a local path or an s3:// URI"),
        ("", "output: empty"),
        ("  ", "output: empty"),
    ],
)
def test_outputs_that_are_no_folder_or_uri_are_refused(tmp_path, output, expected):
    with pytest.raises(ConfigError) as error:
        load_config(str(SAMPLE), output=output)
    assert expected in str(error.value)
    assert not (tmp_path / "s3:").exists()


def test_inputs_by_exact_name_folder_links_and_sources(tmp_path):
    crawl = ROOT / "tests" / "fixtures" / "warc" / "crawl-00000.warc.gz"
    odd = tmp_path / "crawl[1].warc.gz"  # glob characters in a real file's name
    odd.write_bytes(crawl.read_bytes())
    folder = tmp_path / "crawls"
    (folder / "day2").mkdir(parents=True)
    for path in (folder / "a.warc.gz", folder / "day2" / "b.warc.gz"):
        path.write_bytes(crawl.read_bytes())
    (folder / ".partial.tmp").write_bytes(b"hidden: not an input")
    (folder / "day2" / "empty").mkdir()
    local = str(ROOT / "configs" / "local.yaml")
    out = str(tmp_path / "out")
    assert load_config(local, inputs=[str(odd)], output=out).sources[0].input == [str(odd)]
    assert expand_inputs([str(folder)]) == [str(folder / "a.warc.gz"), str(folder / "day2" / "b.warc.gz")]

    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "gone.warc.gz").symlink_to(tmp_path / "deleted.warc.gz")
    (tmp_path / "links" / "ok.warc.gz").symlink_to(crawl)
    two = tmp_path / "two.yaml"
    two.write_text(
        f"sources: [{{name: web, input: ['{folder}/*.warc.gz']}},\n"
        f"          {{name: news, input: ['{folder}/a.warc.gz']}}]\nclassifier: {{kind: none}}\n"
    )
    cases = [
        (local, [str(tmp_path / "links")], f"'{tmp_path / 'links' / 'gone.warc.gz'}' is a broken symbolic link"),
        (local, [str(tmp_path / "links" / "*.warc.gz")], "is a broken symbolic link (to "),
        (local, [str(folder / "day2" / "empty")], f"input '{folder}/day2/empty' is a folder with no file in it"),
        (str(two), None, f"sources[1].input: '{folder}/a.warc.gz' is also an input of sources[0] ('web')"),
    ]
    for config, inputs, expected in cases:
        with pytest.raises(ConfigError) as error:
            load_config(config, inputs=inputs, output=out)
        assert expected in str(error.value), (inputs, str(error.value))


def test_curated_parquet_with_large_string_text_is_accepted(tmp_path):
    pq.write_table(pa.table({"text": pa.array(["a document"], pa.large_string())}), tmp_path / "polars.parquet")
    config = load_config(
        write_config(
            tmp_path, "sources: [{name: old, input: [polars.parquet], curated: true}]\nclassifier: {kind: none}\n"
        ),
        output=str(tmp_path / "out"),
    )
    assert config.sources[0].curated


def test_validate_reports_every_problem_at_once_and_writes_nothing(tmp_path):
    bad = cli(
        "validate",
        str(ROOT / "configs" / "local.yaml"),
        "--output",
        str(tmp_path / "out"),
        "--set",
        "dedup.threshold=7",
        "--set",
        "language.languages=english",
        "--set",
        "packing.bogus=1",
        "--set",
        "quality.min_words=-5",
        "--set",
        "ray.num_cpus=0",
        "--input",
        str(tmp_path / "none.warc"),
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    lines = bad.stderr.strip().splitlines()
    assert all(line.startswith("config error: ") for line in lines), bad.stderr
    for expected in (
        "dedup.threshold",
        "language.languages",
        "unknown key 'packing.bogus'",
        "quality.min_words",
        "ray.num_cpus",
        "none.warc' matches no file",
    ):
        assert sum(expected in line for line in lines) == 1, (expected, bad.stderr)

    good = cli("validate", str(ROOT / "configs" / "local.yaml"), "--output", str(tmp_path / "out"), cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    warcs = sorted((ROOT / "tests" / "fixtures" / "warc").iterdir())
    assert (
        f"read: source 'web' (weight 1): {len(warcs)} crawl files, "
        f"{sum(p.stat().st_size for p in warcs):,} bytes" in good.stdout
    )
    assert f"write: {tmp_path / 'out'} (a new output)" in good.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_secret_key_in_the_config_is_not_written_into_the_manifest_or_log(tmp_path):
    config = load_config(
        str(SAMPLE),
        output=str(tmp_path / "out"),
        overrides=["storage.access_key_id=AKIA", "storage.secret_access_key=do-not-show"],
    )
    written = config.to_dict()  # what manifest.json and run.log hold
    assert written["storage"] == {**written["storage"], "access_key_id": "AKIA", "secret_access_key": "(not shown)"}
    assert config.storage.secret_access_key == "do-not-show"  # the run itself still uses it


def test_input_replaces_only_the_sources_input(tmp_path):
    """--input keeps how the source is read (format, fields, weight, name); with two sources it is refused."""
    (tmp_path / "a.jsonl").write_text('{"body": "one", "key": "a1", "link": "https://a.example/"}\n')
    export = tmp_path / "export.txt"  # JSONL by the source's `format`, not by its name
    export.write_text('{"body": "two", "key": "b1", "link": "https://b.example/"}\n')
    config = write_config(
        tmp_path,
        "sources: [{name: books, input: [a.jsonl], format: jsonl, text_field: body, id_field: key, "
        "url_field: link, weight: 2}]\nstages: [language, quality]\n",
    )
    out = str(tmp_path / "out")
    (source,) = load_config(config, inputs=[str(export)], output=out).sources
    assert (source.name, source.format, source.text_field, source.id_field, source.url_field, source.weight) == (
        "books",
        "jsonl",
        "body",
        "key",
        "link",
        2.0,
    )
    assert source.files == [str(export)]
    result = cli("validate", config, "--input", str(export), "--output", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "read: source 'books' (weight 2): 1 JSONL files" in result.stdout, result.stdout

    two = write_config(
        tmp_path, "sources: [{name: a, input: [a.jsonl]}, {name: b, input: [export.txt], format: jsonl}]\n"
    )
    with pytest.raises(ConfigError, match=r"^--input: the config has 2 sources, and --input replaces the input of one"):
        load_config(two, inputs=[str(export)], output=out)


def test_set_addresses_list_items_by_number(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n')
    (tmp_path / "b.jsonl").write_text('{"text": "two"}\n')
    (tmp_path / "c.jsonl").write_text('{"text": "three"}\n')
    config = write_config(
        tmp_path,
        "sources: [{name: a, input: [a.jsonl]}, {name: b, input: [b.jsonl]}]\n"
        f"stages: [language, {{scorer: nb, kind: naive_bayes, good_examples: ['{CLASSIFIER}/good.txt'], "
        f"bad_examples: ['{CLASSIFIER}/bad.txt'], threshold: 0.1}}]\n",
    )
    out = str(tmp_path / "out")
    loaded = load_config(
        config, overrides=["sources.1.weight=3", "sources.0.input=[c.jsonl]", "stages.1.threshold=0.2"], output=out
    )
    assert loaded.sources[1].weight == 3 and loaded.sources[0].input == [str(tmp_path / "c.jsonl")]
    assert loaded.stages is not None and loaded.stages[1]["threshold"] == 0.2
    assert load_config(config, overrides=["stages.0=quality"], output=out).stages[0] == "quality"
    for override, expected in [
        ("sources.2.weight=1", "--set sources.2.weight: 'sources' has 2 items, so no item 2 (they count from 0)"),
        ("sources.web.weight=1", "--set sources.web.weight: 'sources' is a list; address an item by its number"),
        ("sources.5=null", "--set sources.5: 'sources' has 2 items, so no item 5"),
        ("sources.0.name.x=1", "--set sources.0.name.x: 'sources.0.name' is not a mapping or a list"),
    ]:
        with pytest.raises(ConfigError) as error:
            load_config(config, overrides=[override], output=out)
        assert str(error.value).startswith(expected), (override, str(error.value))


def test_a_section_is_needed_and_checked_only_when_its_stage_runs(tmp_path):
    """docs/stages.md's belt without `classifier` needs no `classifier` section; a section whose stage is not
    in the belt is not checked, and the same section is when its stage is listed."""
    (tmp_path / "a.jsonl").write_text('{"text": "one"}\n')
    sections = (
        "language: {threshold: 5, model_path: nowhere.bin}\nc4: {bad_words_file: nowhere.txt}\n"
        "pii: {kinds: [passport]}\nurl: {blocklists: []}\nextract: {method: magic}\n"
    )
    belt = write_config(
        tmp_path, f"sources: [{{name: web, input: [a.jsonl]}}]\nstages: [quality, repetition]\n{sections}"
    )
    out = str(tmp_path / "out")
    result = cli("validate", belt, "--output", out, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert load_config(belt, output=out).stages == ["quality", "repetition"]

    listed = write_config(
        tmp_path,
        "sources: [{name: web, input: [a.jsonl]}]\nstages: [extract, language, c4, pii, url, quality, classifier]\n"
        + sections,
    )
    result = cli("validate", listed, "--output", out, cwd=tmp_path)
    assert result.returncode == 2
    for expected in (
        "extract.method: expected one of",
        "language.threshold: expected a number in [0, 1], got 5",
        "language.model_path: file",
        "classifier.good_examples: naive_bayes needs example files",
        "pii.kinds: expected a non-empty list",
        "c4.bad_words_file: file",
        "url.blocklists: the url stage needs at least one blocklist file",
    ):
        assert expected in result.stderr, (expected, result.stderr)


def _one_source(tmp_path, extra=""):
    (tmp_path / "in").mkdir(exist_ok=True)
    (tmp_path / "in" / "a.jsonl").write_text('{"text": "a document"}\n')
    return write_config(tmp_path, "sources: [{name: web, input: [in]}]\nclassifier: {kind: none}\n" + extra)


@pytest.mark.parametrize("pattern", ["in", "in/*.jsonl", "in/**"])
def test_an_output_or_staging_inside_an_input_folder_is_refused(tmp_path, pattern):
    # a rerun would read the output's own Parquet files as inputs
    config = _one_source(tmp_path)
    with open(config, "w") as f:
        f.write(f"sources: [{{name: web, input: ['{pattern}']}}]\nclassifier: {{kind: none}}\n")
    with pytest.raises(ConfigError, match=r"output '.*in/out' is inside sources\[0\].input's folder"):
        load_config(config, output=str(tmp_path / "in" / "out"))
    with pytest.raises(ConfigError, match=r"storage.staging: '.*in/stage' is inside sources\[0\].input's folder"):
        load_config(config, output="s3://bucket/x", overrides=[f"storage.staging={tmp_path / 'in' / 'stage'}"])
    load_config(config, output=str(tmp_path / "out"))  # beside the input: accepted
    with open(config, "w") as f:  # a file named exactly lists no folder
        f.write("sources: [{name: web, input: [in/a.jsonl]}]\nclassifier: {kind: none}\n")
    load_config(config, output=str(tmp_path / "in" / "out"))


def test_an_output_with_another_scheme_in_the_config_is_refused(tmp_path):
    config = _one_source(tmp_path, "output: s3:/bucket/x\n")
    with pytest.raises(ConfigError, match="output 's3:/bucket/x': expected a local path or an s3:// URI"):
        load_config(config)


def test_yaml_1_2_floats_without_a_dot_are_numbers(tmp_path):
    config = load_config(
        _one_source(tmp_path, "dedup: {paragraphs: {false_positive_rate: 1e-4}}\nlanguage: {threshold: 5E-1}\n"),
        output=str(tmp_path / "out"),
        overrides=["mixture.max_passes=2e0"],
    )
    assert config.dedup.paragraphs.false_positive_rate == 1e-4 and config.language.threshold == 0.5
    assert config.mixture.max_passes == 2.0


@pytest.mark.parametrize(
    "extra, expected",
    [
        ("tokenizer: {path: in}\n", "tokenizer.path: '{tmp}/in' is a folder, not a tokenizer.json file"),
        (
            "dedup: {paragraphs: {ngram: 1000000000000}}\n",
            "dedup.paragraphs.ngram: expected an integer in [1, 1000], got 1000000000000",
        ),
    ],
)
def test_small_settings_mistakes_are_one_line(tmp_path, extra, expected):
    with pytest.raises(ConfigError) as error:
        load_config(_one_source(tmp_path, extra), output=str(tmp_path / "out"))
    assert error.value.problems == [expected.format(tmp=tmp_path)]


def test_a_negative_weight_is_one_line(tmp_path):
    config = _one_source(tmp_path)
    with open(config, "w") as f:
        f.write("sources: [{name: web, weight: -1, input: [in]}]\nclassifier: {kind: none}\n")
    with pytest.raises(ConfigError) as error:
        load_config(config, output=str(tmp_path / "out"))
    assert error.value.problems == ["sources[0].weight: expected a number >= 0, got -1.0"]


@pytest.mark.parametrize("name", ["''", "'  '"])
def test_an_empty_source_name_is_refused(tmp_path, name):
    with open(_one_source(tmp_path), "w") as f:
        f.write(f"sources: [{{name: {name}, input: [in]}}]\nclassifier: {{kind: none}}\n")
    with pytest.raises(ConfigError, match=r"sources\[0\].name: empty"):
        load_config(str(tmp_path / "config.yaml"), output=str(tmp_path / "out"))
