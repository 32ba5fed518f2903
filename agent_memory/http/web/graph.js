// The relations around one memory, one or two hops out, drawn as plain SVG.
// Every node is a link to that memory (#/m/ID): clicking or pressing Enter on it moves the
// graph there. All text goes in as text nodes, never as markup.

import { storedEdge } from "./api.js";

const NS = "http://www.w3.org/2000/svg";
// Nodes drawn at most, per ring: past these the ring is unreadable on a 640-unit canvas.
export const MAX_FIRST_HOP = 16;
export const MAX_SECOND_HOP = 40;
const RINGS = [
  { rx: 0, ry: 0, r: 20 },
  { rx: 165, ry: 110, r: 14 },
  { rx: 285, ry: 195, r: 11 },
];
const SNIPPET = 160;

function edgeKey({ from_id, to_id, kind }) {
  return kind === "relates_to"
    ? `${Math.min(from_id, to_id)}-${Math.max(from_id, to_id)}-${kind}`
    : `${from_id}-${to_id}-${kind}`;
}

// The nodes and edges: `center` and `around` are memories as GET /api/memories/{id} gives
// them (with `related`); `around` are the first hop's, for the second ring.
export function graphOf(center, around = []) {
  const nodes = new Map();
  nodes.set(center.id, { id: center.id, type: center.type, hop: 0,
    snippet: center.content.slice(0, SNIPPET), parent: null });
  const edges = new Map();
  const hidden = new Set();
  const add = (self, hop, room) => {
    let added = 0;
    for (const related of self.related || []) {
      if (!nodes.has(related.id)) {
        if (added >= room) { hidden.add(related.id); continue; }
        nodes.set(related.id, { id: related.id, type: related.type, hop,
          snippet: related.snippet, parent: self.id });
        added += 1;
      }
      const edge = storedEdge(self.id, related);
      edges.set(edgeKey(edge), edge);
    }
    return added;
  };
  add(center, 1, MAX_FIRST_HOP);
  let room = MAX_SECOND_HOP;
  for (const memory of around) room -= add(memory, 2, room);
  const drawn = [...edges.values()].filter((e) => nodes.has(e.from_id) && nodes.has(e.to_id));
  return { nodes, edges: drawn, hidden: hidden.size };
}

function place(nodes) {
  const first = [...nodes.values()].filter((n) => n.hop === 1);
  const angle = new Map();
  // From the upper right, so that two neighbours do not stack on the center's label.
  first.forEach((node, i) => angle.set(node.id, -Math.PI / 3 + (2 * Math.PI * i) / first.length));
  const sector = (2 * Math.PI) / Math.max(first.length, 1);
  const children = new Map();
  for (const node of nodes.values()) {
    if (node.hop === 2) children.set(node.parent, [...(children.get(node.parent) || []), node]);
  }
  for (const [parent, kids] of children) {
    const step = Math.min((sector * 0.85) / kids.length, 0.32);
    kids.forEach((kid, j) => angle.set(kid.id, angle.get(parent) + (j - (kids.length - 1) / 2) * step));
  }
  for (const node of nodes.values()) {
    const ring = RINGS[node.hop];
    const a = angle.get(node.id) || 0;
    Object.assign(node, { x: ring.rx * Math.cos(a), y: ring.ry * Math.sin(a), r: ring.r });
  }
}

function element(name, attributes = {}, text) {
  const el = document.createElementNS(NS, name);
  for (const [key, value] of Object.entries(attributes)) el.setAttribute(key, String(value));
  if (text !== undefined) el.textContent = text;
  return el;
}

const READS = { relates_to: "relates to", supersedes: "supersedes", caused_by: "was caused by" };

export function drawGraph(svg, graph) {
  place(graph.nodes);
  const edgeLayer = svg.querySelector("#g-edges");
  const nodeLayer = svg.querySelector("#g-nodes");
  edgeLayer.replaceChildren();
  nodeLayer.replaceChildren();
  for (const edge of graph.edges) {
    const a = graph.nodes.get(edge.from_id);
    const b = graph.nodes.get(edge.to_id);
    const length = Math.hypot(b.x - a.x, b.y - a.y) || 1;
    const [ux, uy] = [(b.x - a.x) / length, (b.y - a.y) / length];
    const line = element("line", {
      x1: (a.x + ux * a.r).toFixed(1), y1: (a.y + uy * a.r).toFixed(1),
      x2: (b.x - ux * (b.r + 2)).toFixed(1), y2: (b.y - uy * (b.r + 2)).toFixed(1),
      class: `edge ${edge.kind}`,
    });
    if (edge.kind !== "relates_to") line.setAttribute("marker-end", "url(#arrow)");
    line.append(element("title", {}, `#${edge.from_id} ${READS[edge.kind]} #${edge.to_id}`));
    edgeLayer.append(line);
  }
  // The center last, so it is drawn on top; first in the tab order all the same.
  const ordered = [...graph.nodes.values()].sort((p, q) => p.hop - q.hop);
  for (const node of ordered) {
    const label = `${node.type} #${node.id}: ${node.snippet}`;
    const link = element("a", { href: `#/m/${node.id}`, class: `node hop${node.hop} t-${node.type}`,
      "aria-label": label, "data-id": node.id });
    link.append(
      element("title", {}, label),
      element("circle", { cx: node.x.toFixed(1), cy: node.y.toFixed(1), r: node.r }),
      element("text", { x: (node.x + node.r + 4).toFixed(1), y: (node.y + 4).toFixed(1) },
        `#${node.id}`),
    );
    nodeLayer.append(link);
  }
}
