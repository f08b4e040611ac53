#!/usr/bin/env bash
# Makes the README's pictures: the heatmap of seed 001's sentence (the SVG rendered to PNG), the
# HTML page with "it" pinned in the head view, and the built-in context model's page on the
# river sentence (its model view, and its neuron view for the hidden word in layer 0, head 0),
# all by headless Chromium, offline.
#   scripts/make_heatmap_pictures.sh [path/to/attn]     (default: build/bin/attn)
set -euo pipefail

attn=${1:-build/bin/attn}
out=docs/img
sentence="the animal didn't cross the street because it was too tired"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

"$attn" heatmap "$sentence" -o "$work/animal.svg"
"$attn" heatmap "$sentence" -o "$work/animal.html"
"$attn" heatmap --model builtin "he sat on the [MASK] of the river ." -o "$work/river.html"

shoot() {  # shoot URL PNG WIDTH HEIGHT
  rm -rf "$work/profile"
  chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
    --user-data-dir="$work/profile" --screenshot="$2" --window-size="$3,$4" "$1" 2>/dev/null
}

# The SVG's own size, rounded up, so the picture is the whole heatmap and nothing else.
size=$(sed -n 's/.*<svg [^>]*width="\([0-9.]*\)" height="\([0-9.]*\)".*/\1 \2/p' "$work/animal.svg")
read -r width height <<<"$size"
shoot "file://$work/animal.svg" "$out/heatmap-animal.png" $((${width%.*} + 1)) $((${height%.*} + 1))
shoot "file://$work/animal.html#query=7" "$out/heatmap-page.png" 1300 1000
shoot "file://$work/river.html#layer=0&head=2&query=4" "$out/model-view.png" 1300 1060
shoot "file://$work/river.html#layer=0&head=0&query=4&view=neuron" "$out/neuron-view.png" 1300 900
ls -l "$out"/*.png
