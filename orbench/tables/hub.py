"""Inputs read straight from the Hugging Face Hub.

Two spellings name a file on the Hub:

- ``hf://datasets/OWNER/NAME[@REVISION]/PATH`` (a dataset repo; ``hf://OWNER/NAME/PATH`` is a
  model repo, ``hf://spaces/...`` a Space), as ``huggingface_hub``'s own file system spells it;
- the short name ``or-bench-80k``, the CSV file of the dataset repo ``bench-llm/or-bench``,
  when no local file of that name exists. The other two short names, ``or-bench-hard-1k`` and
  ``or-bench-toxic``, read the copies bundled with the package (orbench.tables.published); their
  Hub copies are read through ``hf://``.

The download goes through ``huggingface_hub.hf_hub_download``, so its cache (``HF_HOME``,
``HF_HUB_CACHE``), token (``HF_TOKEN``), mirror (``HF_ENDPOINT``) and offline switch
(``HF_HUB_OFFLINE``) all apply. Each way it can fail becomes one ``UserError`` line. One
request without retries first checks that the Hub answers at all, so that an unreachable Hub
costs at most PROBE_TIMEOUT seconds (huggingface_hub's own retries take about half a minute).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from . import published
from ..errors import UserError

SCHEME = "hf://"
OR_BENCH_REPO = published.DATASET
# short name -> file of OR_BENCH_REPO (each has the columns prompt, category). The bundled sets
# (orbench.tables.published.BUNDLED) are read from the package, never from the Hub, by their short name.
SHORT_NAMES: dict[str, str] = {
    "or-bench-80k": "or-bench-80k.csv",
    "or-bench-hard-1k": "or-bench-hard-1k.csv",
    "or-bench-toxic": "or-bench-toxic.csv",
}
_TYPE_PREFIXES = {"datasets": "dataset", "spaces": "space"}
_URI_FORM = "hf://datasets/OWNER/NAME[@REVISION]/FILE"
_REPO_PART = re.compile(r"[\w.\-]+")  # what the Hub allows in an owner or repo name
# The HTTP client libraries huggingface_hub has used (by version); their errors are network failures.
_HTTP_LIBRARIES = frozenset({"requests", "urllib3", "httpx", "httpx2", "httpcore", "httpcore2"})
PROBE_TIMEOUT = 3.0  # seconds the reachability check waits for the Hub's first answer


@dataclass(frozen=True)
class HubFile:
    """One file of a Hub repo, at a revision (None: the default branch)."""

    repo_id: str
    filename: str
    repo_type: str = "dataset"
    revision: str | None = None

    @property
    def uri(self) -> str:
        prefix = {"dataset": "datasets/", "space": "spaces/"}.get(self.repo_type, "")
        at = f"@{quote(self.revision, safe='')}" if self.revision else ""  # refs/pr/1 -> refs%2Fpr%2F1
        return f"{SCHEME}{prefix}{self.repo_id}{at}/{self.filename}"

    @property
    def name(self) -> str:
        """The file's own name, which output names are derived from (as for a local file)."""
        return PurePosixPath(self.filename).name


@dataclass(frozen=True)
class Fetched:
    path: Path  # the file in the local Hub cache
    source: dict[str, Any]  # what .run.json records: repo, file, revision (the commit read)


def parse_uri(uri: str) -> HubFile:
    """``hf://[datasets/|spaces/]OWNER/NAME[@REVISION]/PATH`` -> HubFile; a malformed one is a UserError."""
    rest = uri[len(SCHEME):]
    parts = rest.split("/")
    repo_type = _TYPE_PREFIXES.get(parts[0], "model")
    if repo_type != "model":
        parts = parts[1:]
    if len(parts) < 3 or not all(parts):
        raise UserError(f"{uri} is not a Hub file path; expected {_URI_FORM}")
    owner, name = parts[0], parts[1]
    revision = None
    if "@" in name:
        name, revision = name.split("@", 1)
        revision = unquote(revision)  # refs/pr/1 is written refs%2Fpr%2F1, as huggingface_hub does
    if not (_REPO_PART.fullmatch(owner) and _REPO_PART.fullmatch(name)) or revision == "":
        raise UserError(f"{uri} is not a Hub file path; expected {_URI_FORM}")
    return HubFile(repo_id=f"{owner}/{name}", filename="/".join(parts[2:]), repo_type=repo_type, revision=revision)


def hub_file(spec: str | os.PathLike) -> HubFile | None:
    """The Hub file an input names, or None for a local path."""
    text = str(spec)
    if text.startswith(SCHEME):
        return parse_uri(text)
    if text in SHORT_NAMES and text not in published.BUNDLED and not Path(text).exists():
        return HubFile(repo_id=OR_BENCH_REPO, filename=SHORT_NAMES[text])
    return None


def input_name(spec: str | os.PathLike) -> str:
    """The file name an input's outputs are named after: ``or-bench-hard-1k.csv`` for
    ``hf://datasets/bench-llm/or-bench/or-bench-hard-1k.csv`` and for the short name alike."""
    ref = hub_file(spec)
    if ref is not None:
        return ref.name
    short = published.bundled_name(spec)
    if short is not None:
        return published.file_name(short)
    return Path(spec).name


def fetch(ref: HubFile) -> Fetched:
    """Download (or find in the cache) one Hub file. Every failure is one UserError line."""
    # Imported before the logger is quieted: importing the download code sets the library's level.
    from huggingface_hub import constants, hf_hub_download

    # The client logs each retry of an unreachable Hub as a warning; the error below says it once.
    hf_logger = logging.getLogger("huggingface_hub")
    level = hf_logger.level
    hf_logger.setLevel(logging.ERROR)
    try:
        # An unreachable Hub is found out by one quick request; then only the cache is read,
        # instead of huggingface_hub retrying for half a minute before it falls back to it.
        cache_only = bool(constants.HF_HUB_OFFLINE) or not _reachable()
        local = hf_hub_download(
            repo_id=ref.repo_id, filename=ref.filename, repo_type=ref.repo_type, revision=ref.revision,
            local_files_only=cache_only,
        )
    except Exception as err:  # noqa: BLE001  (_hub_error re-raises what it does not know)
        raise _hub_error(err, ref) from None
    finally:
        hf_logger.setLevel(level)
    path = Path(local)
    return Fetched(path=path, source={
        "copy": published.COPY_HUB, "repo": ref.repo_id, "repo_type": ref.repo_type, "file": ref.filename,
        "revision": _commit_of(path, ref), "requested_revision": ref.revision, "uri": ref.uri,
        "sha256": published.sha256_of(path),
    })


def _reachable() -> bool:
    """Whether the Hub (HF_ENDPOINT) answers one request, sent without retries through
    huggingface_hub's own HTTP session (so its proxy settings apply). Any HTTP status counts."""
    from huggingface_hub import constants, get_session

    try:
        get_session().head(constants.ENDPOINT, timeout=PROBE_TIMEOUT)
    except Exception:  # noqa: BLE001  (requests or httpx, by version: any failure means unreachable)
        return False
    return True


def _hub_error(err: Exception, ref: HubFile) -> Exception:
    """The one-line UserError for a failed download; an unknown kind of error is returned as is."""
    from huggingface_hub import constants
    from huggingface_hub.utils import (
        EntryNotFoundError, GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = ref.uri
    if isinstance(err, LocalEntryNotFoundError):
        if constants.HF_HUB_OFFLINE:
            return UserError(f"{where} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and HF_HUB_OFFLINE "
                             f"is set: {_how_to_get(ref, 'unset HF_HUB_OFFLINE and run once with the network on')}")
        return UserError(f"could not reach the Hugging Face Hub at {_endpoint()} for {where}, and it is not in "
                         f"the cache ({constants.HF_HUB_CACHE}): {_how_to_get(ref, 'check the network')}")
    if isinstance(err, GatedRepoError):
        return UserError(f"{ref.repo_id} is a gated repo: accept its terms on the Hub and set HF_TOKEN")
    if isinstance(err, RepositoryNotFoundError):
        return UserError(f"no {ref.repo_type} repo {ref.repo_id!r} on the Hub at {_endpoint()} (or it is "
                         "private and HF_TOKEN does not grant access)")
    if isinstance(err, RevisionNotFoundError):
        return UserError(f"{ref.repo_id} has no revision {ref.revision!r}")
    if isinstance(err, EntryNotFoundError):
        return UserError(f"{ref.repo_id} has no file {ref.filename!r}"
                         + (f" at revision {ref.revision!r}" if ref.revision else ""))
    if isinstance(err, HfHubHTTPError):
        status = getattr(getattr(err, "response", None), "status_code", None)
        hint = "; check HF_TOKEN" if status in (401, 403) else ""
        return UserError(f"the Hub refused {where} (HTTP {status}){hint}")
    if type(err).__module__.split(".")[0] in _HTTP_LIBRARIES:
        # The Hub answered our check, then a request failed for good after huggingface_hub's retries.
        return UserError(f"the connection to the Hugging Face Hub at {_endpoint()} failed while reading {where} "
                         f"({type(err).__name__}: {_first_line(err)}): {_how_to_get(ref, 'try again later')}")
    if isinstance(err, (OSError, ValueError)):
        # e.g. a reply without the Hub's headers (HF_ENDPOINT is not a Hub), a bad repo id
        return UserError(f"could not read {where} from the Hub: {_first_line(err)}")
    return err


def _first_line(err: Exception) -> str:
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return re.sub(r"//[^/@\s]+@", "//", first)  # never echo credentials carried in a URL


def _how_to_get(ref: HubFile, first_step: str) -> str:
    """What to do when a Hub file cannot be had here. For the OR-Bench sets: the bundled copy
    of Hard-1K and Toxic, and for 80K (not bundled) where to get it instead."""
    if ref.repo_id != OR_BENCH_REPO:
        return f"{first_step} or HF_ENDPOINT, or download the file elsewhere and pass its path"
    short = {published.file_name(name): name for name in published.BUNDLED}.get(ref.name)
    if short is not None:
        return f"{first_step}, or use the short name {short}, which reads the copy bundled with orbench"
    return (f"{first_step}; {ref.name} is not bundled with orbench (only Hard-1K and Toxic are): download it "
            f"from https://huggingface.co/datasets/{OR_BENCH_REPO} where the Hub can be reached and pass that "
            "file's path instead, or set HF_ENDPOINT to a Hub mirror")


def _endpoint() -> str:
    """HF_ENDPOINT for messages, without any user:password@ part (a mirror URL may carry one)."""
    from urllib.parse import urlsplit, urlunsplit

    from huggingface_hub import constants

    parts = urlsplit(constants.ENDPOINT)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _commit_of(path: Path, ref: HubFile) -> str | None:
    """The commit a cached file belongs to: the cache keeps it as snapshots/<commit>/<file>."""
    depth = len(PurePosixPath(ref.filename).parts)
    snapshot = path.parents[depth - 1] if len(path.parents) >= depth else None
    if snapshot is not None and snapshot.parent.name == "snapshots":
        return snapshot.name
    return None
