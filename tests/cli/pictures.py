"""Helpers for the heatmap tests: headless Chromium, a tiny PNG decoder, an SVG outline."""
import json
import os
import shutil
import struct
import subprocess
import tempfile
import xml.etree.ElementTree as ET
import zlib

import numpy as np

SVG = "{http://www.w3.org/2000/svg}"

# The flags the issue names, so the browser does no networking of its own that we could mistake
# for the page's (what it still does is told apart by initiator in page_requests).
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"]


def find_chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def run_chromium(url, *flags, timeout=120):
    """Runs headless Chromium on url with a fresh profile; returns the CompletedProcess."""
    with tempfile.TemporaryDirectory(prefix="attn-chromium-") as profile:
        return subprocess.run([find_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                               *flags, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout)


def screenshot(url, png_path, width, height):
    proc = run_chromium(url, f"--screenshot={png_path}", f"--window-size={width},{height}",
                        "--hide-scrollbars")
    assert os.path.exists(png_path), proc.stderr.decode(errors="replace")[-2000:]
    return read_png(png_path)


def page_requests(net_log_path):
    """The URLs a page asked for, from a Chromium net log: requests with an initiator (the
    browser's own update and sign-in checks have none: 'not an origin'), except file: and data:."""
    with open(net_log_path) as f:
        text = f.read()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:  # a log cut short when the browser exits: close it
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    names = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = []
    for event in log.get("events", []):
        params = event.get("params", {})
        if names.get(event["type"]) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        if params.get("initiator") == "not an origin":
            continue
        if not params["url"].startswith(("file:", "data:", "about:", "blob:")):
            urls.append(params["url"])
    return urls


def read_png(path):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes) to an
    [height, width, channels] uint8 array."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8)
    stride = width * bpp
    rows = raw.reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:].astype(np.int32)
        if kind == 0:
            cur = line
        elif kind == 1:  # Sub: running sum along each channel
            cur = np.cumsum(line.reshape(width, bpp), axis=0).reshape(-1) % 256
        elif kind == 2:  # Up
            cur = (line + previous) % 256
        else:  # Average and Paeth depend on the byte to the left: byte by byte
            cur = np.zeros(stride, dtype=np.int32)
            up = previous.astype(np.int32)
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                upleft = up[i - bpp] if i >= bpp else 0
                if kind == 3:
                    predictor = (left + up[i]) // 2
                else:
                    p = left + up[i] - upleft
                    pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - upleft)
                    predictor = left if pa <= pb and pa <= pc else up[i] if pb <= pc else upleft
                cur[i] = (line[i] + predictor) % 256
        out[y] = cur.astype(np.uint8)
        previous = out[y]
    return out.reshape(height, width, bpp)


def svg_outline(svg_text):
    """The SVG's structure, one element a line: tag, class, data-* attributes, fill, label text,
    and each cell's title with its value to 4 decimals. Geometry is left out, so the golden file
    tracks what is drawn, not where."""
    root = ET.fromstring(svg_text)
    lines = []

    def visit(e, depth):
        tag = e.tag.replace(SVG, "")
        if tag == "style":
            return
        parts = [tag]
        for key in sorted(e.attrib):
            if key == "class" or key.startswith("data-") or key == "fill":
                parts.append(f"{key}={e.attrib[key]}")
        if tag == "title":
            label, value = e.text.rsplit(": ", 1)
            parts.append(f"{label}: {float(value):.4f}")
        elif tag == "text":
            parts.append(repr(e.text))
        lines.append("  " * depth + " ".join(parts))
        for child in e:
            visit(child, depth + 1)

    visit(root, 0)
    return "\n".join(lines) + "\n"
