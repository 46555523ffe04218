"""Inputs straight from the Hugging Face Hub, through huggingface_hub, against a loopback Hub
(orbench.testing.fake_hub) set as HF_ENDPOINT: hf:// paths and the 80K set's short name, the
download cache and HF_HUB_OFFLINE, revisions, what .run.json records, one-line errors, and an
unreachable Hub that costs one request, not a round of retries. (The bundled Hard-1K and Toxic:
tests/test_published_sets.py.)"""

from __future__ import annotations

import hashlib
import importlib.util
import socket
import threading
from pathlib import Path

import pytest

from orbench.tables import hub
from orbench.errors import UserError
from orbench.testing.fake_hub import FakeHub
from orbench.testing.fake_openai import FakeOpenAIServer
from tests.responders import protocol_responder
from tests.stage_helpers import (  # noqa: F401  (fixtures)
    clone, error_lines, fake_entry, read_csv, run_script, runinfo, write_models,
)

REPO = "bench-llm/or-bench"
HARD = "prompt,category\nhow do I pick a lock on my own door,illegal\nREFUSE how to find someone's address,privacy\n"
TOXIC = "prompt,category\nhow to make a weapon at home,violence\n"
HARD_URI = f"hf://datasets/{REPO}/or-bench-hard-1k.csv"
TOKEN = "hf_test_secret_token_123"


@pytest.fixture
def fake_hub():
    with FakeHub() as server:
        yield server


@pytest.fixture
def target(tmp_path):
    """A fake target model (the stage-4 protocol responder) and a models file naming it 'fake'."""
    with FakeOpenAIServer(protocol_responder) as srv:
        yield srv, write_models(tmp_path / "models.toml", {"fake": fake_entry(srv)})


def hub_env(server: FakeHub | str, home: Path, **extra: str | None) -> dict[str, str | None]:
    """The network on (conftest switches it off), the fake Hub as HF_ENDPOINT, HF_HOME in tmp."""
    url = server if isinstance(server, str) else server.url
    return {"HF_ENDPOINT": url, "HF_HOME": str(home), "HF_HUB_OFFLINE": None, **extra}


def stage4(clone, models, *args, env):
    return run_script(clone, "alignment_checker", "--model=fake", f"--models_file={models}", *args, env=env)


def closed_port() -> int:
    with socket.socket() as s:  # bound then released: nothing listens there afterwards
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------- reading from the Hub


def test_hf_path_downloads_once_then_reads_offline_from_the_cache(clone, tmp_path, fake_hub, target):
    commit = fake_hub.add_commit(REPO, {"or-bench-hard-1k.csv": HARD})
    _, models = target
    home = tmp_path / "hf"
    first = stage4(clone, models, f"--input_file={HARD_URI}", env=hub_env(fake_hub, home))
    assert first.returncode == 0, first.stderr
    out = clone / "alignment_checker" / "final_fake_results" / "fake_merged_or-bench-hard-1k.csv"
    rows = read_csv(out)
    assert list(rows["prompt"]) == ["how do I pick a lock on my own door", "REFUSE how to find someone's address"]
    assert list(rows["is_rejected"]) == ["False", "True"]
    info = runinfo(out)
    assert info["input_file"] == HARD_URI
    assert info["input_source"]["repo"] == REPO and info["input_source"]["file"] == "or-bench-hard-1k.csv"
    assert info["input_source"]["revision"] == commit
    fetched = [(h.method, h.path) for h in fake_hub.file_requests()]
    assert fetched == [("HEAD", f"/datasets/{REPO}/resolve/main/or-bench-hard-1k.csv"),
                       ("GET", f"/datasets/{REPO}/resolve/main/or-bench-hard-1k.csv")]

    # Offline, the server still up: the file comes from the cache and the Hub is asked nothing.
    asked = len(fake_hub.requests)
    again = stage4(clone, models, f"--input_file={HARD_URI}", "--output_path=offline.csv",
                   env=hub_env(fake_hub, home, HF_HUB_OFFLINE="1"))
    assert again.returncode == 0, again.stderr
    assert len(fake_hub.requests) == asked
    assert read_csv(clone / "alignment_checker" / "offline.csv").equals(rows)
    assert runinfo(clone / "alignment_checker" / "offline.csv")["input_source"]["revision"] == commit

    # And with the Hub gone and HF_HUB_OFFLINE unset, the same cached file is read.
    fake_hub.stop()
    gone = stage4(clone, models, f"--input_file={HARD_URI}", "--output_path=gone.csv",
                  env=hub_env(f"http://127.0.0.1:{closed_port()}", home))
    assert gone.returncode == 0, gone.stderr
    assert read_csv(clone / "alignment_checker" / "gone.csv").equals(rows)
    assert runinfo(clone / "alignment_checker" / "gone.csv")["input_source"]["revision"] == commit


def test_short_name_names_the_outputs_and_a_local_file_wins(clone, tmp_path, fake_hub, target):
    """or-bench-80k (not bundled) is read from the Hub; a local file named like a short name is
    read before the bundled copy and the Hub."""
    fake_hub.add_commit(REPO, {"or-bench-80k.csv": TOXIC})
    srv, models = target
    env = hub_env(fake_hub, tmp_path / "hf")
    proc = run_script(clone, "moderator", "--moderator_model=fake", "--input_file_path=or-bench-80k",
                      f"--models_file={models}", env=env)
    assert proc.returncode == 0, proc.stderr
    out = clone / "moderator" / "or-bench-80k_moderation_merged_fake_prompt.csv"
    assert list(read_csv(out)["prompt"]) == ["how to make a weapon at home"]
    assert runinfo(out)["input_source"]["file"] == "or-bench-80k.csv"
    assert runinfo(out)["input_source"]["sha256"] == hashlib.sha256(TOXIC.encode()).hexdigest()

    # A local file of that very name is read instead, and the Hub is not asked.
    for short in ("or-bench-80k", "or-bench-toxic"):
        (clone / "alignment_checker" / short).write_text("prompt,category\nmy own prompt,x\n", encoding="utf-8")
        asked = len(fake_hub.requests)
        local = stage4(clone, models, f"--input_file={short}", env=env)
        assert local.returncode == 0, local.stderr
        out4 = clone / "alignment_checker" / "final_fake_results" / f"fake_merged_{short}.csv"
        assert list(read_csv(out4)["prompt"]) == ["my own prompt"]
        assert runinfo(out4)["input_source"] is None
        assert len(fake_hub.requests) == asked


def test_a_pinned_revision_reads_that_commit(clone, tmp_path, fake_hub, target):
    old = fake_hub.add_commit(REPO, {"or-bench-hard-1k.csv": HARD})
    new = fake_hub.add_commit(REPO, {"or-bench-hard-1k.csv": "prompt,category\na newer prompt,privacy\n"})
    fake_hub.tag(REPO, "v1.0", old)
    _, models = target
    env = hub_env(fake_hub, tmp_path / "hf")
    older = "how do I pick a lock on my own door"
    for rev, commit, first in ((old, old, older), ("v1.0", old, older), ("main", new, "a newer prompt")):
        out = tmp_path / f"out_{rev}.csv"
        proc = stage4(clone, models, f"--input_file=hf://datasets/{REPO}@{rev}/or-bench-hard-1k.csv",
                      f"--output_path={out}", env=env)
        assert proc.returncode == 0, proc.stderr
        assert runinfo(out)["input_source"]["revision"] == commit
        assert runinfo(out)["input_source"]["requested_revision"] == rev
        assert read_csv(out)["prompt"][0] == first


def test_a_large_file_redirected_to_a_cdn_and_the_token_sent(clone, tmp_path, target):
    """As the Hub serves LFS files: a 302 to another host with X-Linked-Etag/Size; HF_TOKEN is
    sent to the Hub as a bearer token, and printed nowhere."""
    _, models = target
    with FakeHub(lfs=True) as server:
        commit = server.add_commit(REPO, {"or-bench-hard-1k.csv": HARD})
        proc = stage4(clone, models, f"--input_file={HARD_URI}", env=hub_env(server, tmp_path / "hf", HF_TOKEN=TOKEN))
        hits = server.file_requests()
    assert proc.returncode == 0, proc.stderr
    out = clone / "alignment_checker" / "final_fake_results" / "fake_merged_or-bench-hard-1k.csv"
    assert len(read_csv(out)) == 2 and runinfo(out)["input_source"]["revision"] == commit
    assert [h.status for h in hits] == [302, 200] and hits[1].path.startswith("/cdn/")
    assert hits[0].authorization == f"Bearer {TOKEN}"
    assert hits[1].authorization is None  # never sent off the Hub's host
    assert TOKEN not in proc.stdout + proc.stderr
    assert not any(TOKEN in p.read_text(errors="replace") for p in out.parent.iterdir())


# ------------------------------------------------------------------------- one-line errors


@pytest.mark.parametrize("uri, message", [
    (f"hf://datasets/{REPO}/or-bench-nope.csv", "bench-llm/or-bench has no file 'or-bench-nope.csv'"),
    ("hf://datasets/someone/missing/x.csv", "no dataset repo 'someone/missing' on the Hub"),
    (f"hf://datasets/{REPO}@v9/or-bench-hard-1k.csv", "bench-llm/or-bench has no revision 'v9'"),
    ("hf://datasets/only-owner", "is not a Hub file path"),
])
def test_hub_errors_are_one_line_and_exit_2(clone, tmp_path, fake_hub, target, uri, message):
    fake_hub.add_commit(REPO, {"or-bench-hard-1k.csv": HARD})
    srv, models = target
    proc = stage4(clone, models, f"--input_file={uri}", env=hub_env(fake_hub, tmp_path / "hf", HF_TOKEN=TOKEN))
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert TOKEN not in proc.stderr and "Traceback" not in proc.stderr
    assert srv.requests == []  # nothing was sent to the model


def test_offline_with_nothing_cached_is_one_line(clone, tmp_path, fake_hub, target):
    fake_hub.add_commit(REPO, {"or-bench-80k.csv": HARD})
    _, models = target
    proc = stage4(clone, models, "--input_file=or-bench-80k",
                  env=hub_env(fake_hub, tmp_path / "hf", HF_HUB_OFFLINE="1"))
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "HF_HUB_OFFLINE is set" in lines[0], proc.stderr
    assert f"hf://datasets/{REPO}/or-bench-80k.csv" in lines[0]
    assert "not bundled" in lines[0] and "pass that file's path" in lines[0] and "HF_ENDPOINT" in lines[0]
    assert fake_hub.requests == []


def test_no_network_and_no_cache_is_one_line(clone, tmp_path, target):
    """Nothing listens at HF_ENDPOINT: one line, which for OR-Bench-80K says how to get it."""
    _, models = target
    endpoint = f"http://127.0.0.1:{closed_port()}"
    for spec, hint in ((HARD_URI, "use the short name or-bench-hard-1k"), ("or-bench-80k", "not bundled")):
        proc = stage4(clone, models, f"--input_file={spec}", env=hub_env(endpoint, tmp_path / "hf"))
        assert proc.returncode == 2
        lines = error_lines(proc.stderr)
        assert len(lines) == 1, proc.stderr
        assert "could not reach the Hugging Face Hub" in lines[0] and endpoint in lines[0] and hint in lines[0]


class DroppingHub:
    """A TCP server on loopback that accepts each connection and closes it at once, counting
    them: to huggingface_hub a failure it retries (a dropped connection)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.accepted = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self.sock.close()


def test_an_unreachable_hub_is_not_retried(clone, tmp_path, target):
    """huggingface_hub alone retries a dropped connection 5 times with backoff (about 25 s, more
    when each try waits out a timeout). We ask once, without retries, then read only the cache:
    at most one more connection (huggingface_hub 2.x looks up its agent registry once)."""
    _, models = target
    server = DroppingHub()
    try:
        proc = stage4(clone, models, "--input_file=or-bench-80k", env=hub_env(server.url, tmp_path / "hf"))
    finally:
        server.close()
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "could not reach the Hugging Face Hub" in lines[0], proc.stderr
    assert 1 <= server.accepted <= 2


# ------------------------------------------------------------------------- names, in-process


def test_names_parse_to_hub_files():
    assert hub.hub_file("or-bench-80k") == hub.HubFile(REPO, "or-bench-80k.csv")
    assert hub.hub_file("or-bench-hard-1k") is None and hub.hub_file("or-bench-toxic") is None  # bundled
    ref = hub.hub_file("hf://datasets/owner/name@refs%2Fpr%2F3/data/train.jsonl")
    assert ref == hub.HubFile("owner/name", "data/train.jsonl", "dataset", "refs/pr/3")
    assert ref.uri == "hf://datasets/owner/name@refs%2Fpr%2F3/data/train.jsonl" and ref.name == "train.jsonl"
    assert hub.hub_file("hf://owner/model/file.csv").repo_type == "model"
    assert hub.hub_file("prompts.csv") is None and hub.hub_file("or-bench-80k.csv") is None
    assert hub.input_name(HARD_URI) == hub.input_name("or-bench-hard-1k") == "or-bench-hard-1k.csv"
    for bad in ("hf://", "hf://datasets/a/b", "hf://datasets/a@/b/c.csv", "hf://datasets/a/b@/c.csv",
                "hf://datasets/a b/c/d.csv"):
        with pytest.raises(UserError, match="is not a Hub file path"):
            hub.hub_file(bad)


def test_default_output_names_come_from_the_hub_file():
    from orbench.stages.alignment import default_output
    from orbench.tables.table_io import output_stem

    assert default_output("m", f"hf://datasets/{REPO}@abc/or-bench-hard-1k.csv").name == "m_merged_or-bench-hard-1k.csv"
    assert default_output("m", "or-bench-toxic").name == "m_merged_or-bench-toxic.csv"
    assert output_stem("or-bench-80k") == "or-bench-80k"


def test_a_connection_lost_after_the_check_is_one_line():
    """The Hub answered the reachability check, then a download failed for good (after
    huggingface_hub's own retries, too slow to wait out here): the error is a UserError line."""
    httpx = pytest.importorskip("httpx2" if importlib.util.find_spec("httpx2") else "httpx")
    err = hub._hub_error(httpx.ReadError("[Errno 104] Connection reset by peer"), hub.hub_file("or-bench-80k"))
    assert isinstance(err, UserError)
    assert "failed while reading hf://datasets/bench-llm/or-bench/or-bench-80k.csv" in str(err)
    assert "Connection reset by peer" in str(err) and "not bundled" in str(err)
    assert isinstance(hub._hub_error(KeyError("a bug"), hub.hub_file("or-bench-80k")), KeyError)  # bugs stay bugs
