"""Inputs read straight from the Hugging Face Hub.

Two spellings name a file on the Hub:

- ``hf://datasets/OWNER/NAME[@REVISION]/PATH`` (a dataset repo; ``hf://OWNER/NAME/PATH`` is a
  model repo, ``hf://spaces/...`` a Space), as ``huggingface_hub``'s own file system spells it;
- the short names of the published sets, ``or-bench-80k``, ``or-bench-hard-1k`` and
  ``or-bench-toxic``, which are the CSV files of the dataset repo ``bench-llm/or-bench``.
  A short name is a Hub name only when no local file of that name exists.

The download goes through ``huggingface_hub.hf_hub_download``, so its cache (``HF_HOME``,
``HF_HUB_CACHE``), token (``HF_TOKEN``), mirror (``HF_ENDPOINT``) and offline switch
(``HF_HUB_OFFLINE``) all apply. Each way it can fail becomes one ``UserError`` line.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from .errors import UserError

SCHEME = "hf://"
OR_BENCH_REPO = "bench-llm/or-bench"
# short name -> file of OR_BENCH_REPO (each has the columns prompt, category)
SHORT_NAMES: dict[str, str] = {
    "or-bench-80k": "or-bench-80k.csv",
    "or-bench-hard-1k": "or-bench-hard-1k.csv",
    "or-bench-toxic": "or-bench-toxic.csv",
}
_TYPE_PREFIXES = {"datasets": "dataset", "spaces": "space"}
_URI_FORM = "hf://datasets/OWNER/NAME[@REVISION]/FILE"
_REPO_PART = re.compile(r"[\w.\-]+")  # what the Hub allows in an owner or repo name


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
    if text in SHORT_NAMES and not Path(text).exists():
        return HubFile(repo_id=OR_BENCH_REPO, filename=SHORT_NAMES[text])
    return None


def input_name(spec: str | os.PathLike) -> str:
    """The file name an input's outputs are named after: ``or-bench-hard-1k.csv`` for both
    ``hf://datasets/bench-llm/or-bench/or-bench-hard-1k.csv`` and the short name."""
    ref = hub_file(spec)
    if ref is not None:
        return ref.name
    return Path(spec).name


def fetch(ref: HubFile) -> Fetched:
    """Download (or find in the cache) one Hub file. Every failure is one UserError line."""
    # Imported before the logger is quieted: importing the download code sets the library's level.
    from huggingface_hub import constants, hf_hub_download
    from huggingface_hub.utils import (
        EntryNotFoundError, GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = ref.uri
    # The client logs each retry of an unreachable Hub as a warning; the error below says it once.
    hf_logger = logging.getLogger("huggingface_hub")
    level = hf_logger.level
    hf_logger.setLevel(logging.ERROR)
    try:
        local = hf_hub_download(
            repo_id=ref.repo_id, filename=ref.filename, repo_type=ref.repo_type, revision=ref.revision,
        )
    except LocalEntryNotFoundError:
        if constants.HF_HUB_OFFLINE:
            raise UserError(f"{where} is not in the Hugging Face cache ({constants.HF_HUB_CACHE}) and HF_HUB_OFFLINE "
                            "is set: run once with the network on (or unset HF_HUB_OFFLINE)") from None
        raise UserError(f"could not reach the Hugging Face Hub at {_endpoint()} for {where}, and it is not in "
                        f"the cache ({constants.HF_HUB_CACHE}); check the network, HF_ENDPOINT, or use a local file") from None
    except GatedRepoError:
        raise UserError(f"{ref.repo_id} is a gated repo: accept its terms on the Hub and set HF_TOKEN") from None
    except RepositoryNotFoundError:
        raise UserError(f"no {ref.repo_type} repo {ref.repo_id!r} on the Hub at {_endpoint()} (or it is "
                        "private and HF_TOKEN does not grant access)") from None
    except RevisionNotFoundError:
        raise UserError(f"{ref.repo_id} has no revision {ref.revision!r}") from None
    except EntryNotFoundError:
        raise UserError(f"{ref.repo_id} has no file {ref.filename!r}"
                        + (f" at revision {ref.revision!r}" if ref.revision else "")) from None
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        hint = "; check HF_TOKEN" if status in (401, 403) else ""
        raise UserError(f"the Hub refused {where} (HTTP {status}){hint}") from None
    except (OSError, ValueError) as err:
        # e.g. a reply without the Hub's headers (HF_ENDPOINT is not a Hub), a bad repo id
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        first = re.sub(r"//[^/@\s]+@", "//", first)  # never echo credentials carried in a URL
        raise UserError(f"could not read {where} from the Hub: {first}") from None
    finally:
        hf_logger.setLevel(level)
    path = Path(local)
    return Fetched(path=path, source={
        "repo": ref.repo_id, "repo_type": ref.repo_type, "file": ref.filename,
        "revision": _commit_of(path, ref), "requested_revision": ref.revision, "uri": ref.uri,
    })


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
