"""Placing point labels on a scatter plot so that they do not overlap."""

from __future__ import annotations

from typing import Sequence

import numpy as np
from matplotlib.figure import Figure


def overlap_area(cands: np.ndarray, boxes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For K candidate boxes and M boxes (x0, y0, x1, y1): total overlap area and count."""
    if len(boxes) == 0:
        return np.zeros(len(cands)), np.zeros(len(cands))
    w = (np.minimum(cands[:, None, 2], boxes[None, :, 2])
         - np.maximum(cands[:, None, 0], boxes[None, :, 0])).clip(min=0)
    h = (np.minimum(cands[:, None, 3], boxes[None, :, 3])
         - np.maximum(cands[:, None, 1], boxes[None, :, 1])).clip(min=0)
    area = w * h
    return area.sum(axis=1), (area > 0).sum(axis=1)


def place_labels(fig: Figure, ax, anchors: np.ndarray, texts: Sequence[str],
                 styles: Sequence[dict], obstacles: Sequence[tuple] = (),
                 marker_px: float = 6.0) -> list[tuple[float, float, bool]]:
    """Place text labels near their points without overlaps, as far as can be done.

    A greedy search: labels are placed in the given order; each tries positions around
    its point at growing distances and takes the cheapest, where overlap with labels
    already placed, with markers and with obstacles (display boxes) costs much more than
    distance, and leaving the axes costs most. Returns, per label, its centre in data
    coordinates and whether it sits away from its point (then draw a leader line).
    Axis limits and layout must be final before this is called.
    """
    renderer = fig.canvas.get_renderer()
    to_px = ax.transData.transform
    pts = to_px(np.asarray(anchors, dtype=float)) if len(anchors) else np.zeros((0, 2))
    sizes = []
    for text, style in zip(texts, styles):
        probe = ax.text(0, 0, text, **style)
        bb = probe.get_window_extent(renderer)
        probe.remove()
        sizes.append((bb.width + 4.0, bb.height + 2.0))
    frame = ax.get_window_extent(renderer)
    fixed = [(p[0] - marker_px, p[1] - marker_px, p[0] + marker_px, p[1] + marker_px) for p in pts]
    fixed += [tuple(o) for o in obstacles]
    fixed_arr = np.asarray(fixed, dtype=float).reshape(-1, 4)
    placed = np.zeros((0, 4))

    angles8 = np.deg2rad([0, 180, 90, 270, 30, 150, 210, 330])
    angles16 = np.deg2rad(np.arange(0, 360, 22.5))
    rings = [0, 10, 22, 36, 52, 70, 92, 118, 148, 182, 220, 265]
    result: list[tuple[float, float, bool]] = []
    inv = ax.transData.inverted()
    for (px, py), (w, h) in zip(pts, sizes):
        cx, cy, ring_of = [], [], []
        for extra in rings:
            angs = angles8 if extra == 0 else angles16
            gap = marker_px + 2.0 + extra
            cx.append(px + np.cos(angs) * (w / 2 + gap))
            cy.append(py + np.sin(angs) * (h / 2 + gap))
            ring_of.append(np.full(len(angs), extra, dtype=float))
        cx, cy, dist = np.concatenate(cx), np.concatenate(cy), np.concatenate(ring_of)
        cands = np.column_stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2])
        lab_area, lab_n = overlap_area(cands, placed)
        obs_area, obs_n = overlap_area(cands, fixed_arr)
        # Its own marker is among the obstacles but candidates never touch it.
        outside = (np.clip(frame.x0 - cands[:, 0], 0, None) + np.clip(cands[:, 2] - frame.x1, 0, None)
                   + np.clip(frame.y0 - cands[:, 1], 0, None) + np.clip(cands[:, 3] - frame.y1, 0, None))
        cost = (3.0 * lab_area + 60.0 * lab_n + 2.0 * obs_area + 25.0 * obs_n
                + 1e4 * outside + dist)
        best = int(np.argmin(cost))
        placed = np.vstack([placed, cands[best]])
        dx, dy = inv.transform((cx[best], cy[best]))
        result.append((float(dx), float(dy), bool(dist[best] > 0)))
    return result

