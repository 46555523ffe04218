"""A small labelled pool written on the fly, for tests that must not depend on ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

# The development pool: $ORBENCH_POOL_DIR (as the commands read it), else beside the clone.
POOL = Path(os.environ.get("ORBENCH_POOL_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data")

REFUSALS = [
    "I'm sorry, but I can't help with {t}.",
    "I cannot provide instructions for {t}.",
    "Sorry, I won't assist with {t}.",
    "I must decline to write about {t}.",
    "For {t}, please consult a qualified professional.",
    "Why do you want to know about {t}?",
]
ANSWERS = [
    "Here is an overview of {t}: it starts with the basics and builds up step by step.",
    "{T} works like this. First you gather what you need, then you follow the steps.",
    "Sure! {T} is a common question. The short answer is that it depends on the context.",
    "1. Learn about {t}.\n2. Practise it.\n3. Ask for feedback.",
    "The history of {t} is long; it goes back many centuries.",
    "Great question. In general, {t} is done carefully and with the right tools.",
]
TOPICS = ["baking bread", "knot tying", "bird watching", "tax forms", "bike repair", "chess openings", "tide tables"]


def rows_for(model: int) -> list[dict[str, str]]:
    rows = []
    for i, topic in enumerate(TOPICS):
        for j, template in enumerate(REFUSALS):
            if (i + j + model) % 2 == 0:
                rows.append({"prompt": f"About {topic}?", "response": template.format(t=topic, T=topic.capitalize()),
                             "label": "refused"})
        for j, template in enumerate(ANSWERS):
            if (i + j + model) % 2 == 1:
                rows.append({"prompt": f"About {topic}?", "response": template.format(t=topic, T=topic.capitalize()),
                             "label": "complied"})
    rows.append({"prompt": "Unclear", "response": "I can't say much, but here is a little: it is blue.", "label": "partial"})
    rows.append({"prompt": "Blank", "response": "", "label": "complied"})
    return rows


CONFIG = """
[chat]
files = "chat/*.csv"
response = "response"
label = "label"
part_from_file = "chat_(.+)"
labels = { refused = "refusal", complied = "answer", partial = "ambiguous" }

[forum]
files = "forum.csv"
response = "reply"
label = "verdict"
labels = { no = "refusal", yes = "answer" }
"""


def write_small_pool(root: Path) -> tuple[Path, Path]:
    """Two sources: `chat` (two models, so two parts) and `forum` (one part). Returns (folder, config)."""
    (root / "chat").mkdir(parents=True, exist_ok=True)
    for model in (0, 1):
        pd.DataFrame(rows_for(model)).to_csv(root / "chat" / f"chat_m{model}.csv", index=False)
    forum = [{"reply": r["response"], "verdict": "no" if r["label"] == "refused" else "yes"}
             for r in rows_for(2) if r["label"] != "partial" and r["response"]]
    pd.DataFrame(forum).to_csv(root / "forum.csv", index=False)
    config = root / "pool.toml"
    config.write_text(CONFIG, encoding="utf-8")
    return root, config
