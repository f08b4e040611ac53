// Written for attn; kept in C++ string literals so the library carries them (no asset files to
// install or find at run time). The script is page_script.js, embedded by page_script.S.
#include "viz/page_assets.hpp"

namespace attn::viz {

const char* const page_css = R"css(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; color: #222; background: #fff;
       margin: 24px; line-height: 1.4; }
h1 { font-size: 22px; margin: 0 0 6px; }
h2 { font-size: 17px; margin: 0 0 6px; display: inline-block; margin-right: 12px; }
h3 { font-size: 14px; margin: 20px 0 6px; font-weight: normal; }
p.note { margin: 2px 0; color: #444; }
p.hint { margin: 4px 0 10px; color: #666; font-size: 13px; max-width: 560px; }
section.view { margin-top: 26px; }
.pictures { display: flex; flex-wrap: wrap; gap: 32px; align-items: flex-start; }
.pictures > section { min-width: 0; max-width: 100%; }
.controls { margin: 14px 0 4px; font-size: 14px; display: flex; flex-wrap: wrap; gap: 18px;
            align-items: center; position: sticky; top: 0; background: #fff; padding: 6px 0;
            z-index: 2; border-bottom: 1px solid #eee; }
.controls select { font-size: 14px; max-width: 260px; }
.toolbar { display: inline-flex; gap: 6px; vertical-align: 3px; }
.toolbar button { font-size: 12px; padding: 1px 8px; cursor: pointer; }
.map-scroll { overflow: auto; width: fit-content; max-width: min(100%, 940px); max-height: 720px;
              border: 1px solid #eee; }
#heatmap { display: block; cursor: crosshair; }
.readout { font-size: 13px; color: #333; min-height: 1.4em; margin: 6px 0 0;
           font-variant-numeric: tabular-nums; }
.model-grid .layer-row { display: flex; flex-wrap: wrap; gap: 8px; align-items: flex-end;
                         margin-bottom: 8px; }
.model-grid .layer-name { width: 64px; font-size: 12px; color: #555; align-self: center; }
.model-grid figure { margin: 0; cursor: pointer; text-align: center; font-size: 11px; color: #555; }
.model-grid canvas { display: block; border: 2px solid transparent; }
.model-grid figure.chosen canvas { border-color: #d62728; }
.head-picks { font-size: 13px; margin: 4px 0 8px; display: flex; flex-wrap: wrap; gap: 10px; }
.head-picks .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 3px; }
.head-view-scroll { overflow: auto; max-height: 720px; }
#head-view { font-size: 13px; user-select: none; }
#head-view .token { cursor: pointer; dominant-baseline: central; }
#head-view .token-box { fill: transparent; }
#head-view .token-box.focus { stroke: #d62728; stroke-width: 1.5; }
#head-view .link { stroke: #2a6ab8; fill: none; }
#head-view .score { font-size: 11px; fill: #444; dominant-baseline: central; }
#head-view .column-title { font-size: 12px; fill: #666; font-weight: bold; }
.table-wrap { overflow-x: auto; max-width: 100%; }
table.matrix, table.neuron, table.predictions { border-collapse: collapse; font-size: 12px;
                                                 font-variant-numeric: tabular-nums; }
table.matrix th, table.matrix td, table.neuron th, table.neuron td,
table.predictions th, table.predictions td { padding: 2px 6px; text-align: right; white-space: nowrap; }
table.matrix thead th, table.neuron thead th, table.predictions thead th {
  border-bottom: 1px solid #999; font-weight: normal; color: #444; }
table.matrix tbody th, table.neuron tbody th, table.predictions tbody th {
  text-align: left; font-weight: normal; color: #444; border-right: 1px solid #999; }
table.matrix td.sum, table.matrix th.sum, table.neuron .sum { border-left: 1px solid #999; }
table.matrix .gap { color: #999; text-align: center; }
table.matrix td.dark, table.neuron td.dark { color: #fff; }
table.neuron td.cell { min-width: 34px; }
table.neuron tr.query th, table.neuron tr.query td { border-bottom: 1px solid #999; }
table.neuron tr.total th, table.neuron tr.total td { border-top: 1px solid #999; }
table.neuron .bar { display: inline-block; height: 9px; background: #3a7fc4; margin-left: 6px;
                    vertical-align: 0; }
table.predictions td { text-align: left; }
table.predictions tr.last th, table.predictions tr.last td { font-weight: bold; }
table.predictions .p { color: #666; font-size: 11px; margin-left: 3px; }
.note-small { font-size: 12px; color: #666; margin: 4px 0; }
pre.export { display: none; }
)css";

}  // namespace attn::viz
