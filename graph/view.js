// The page of `spyder graph view`: a force layout of the embedded graph
// (force-graph), coloured by node type, with search and click-to-expand.
// window.spyderView exposes the page's state for tests and the console.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('graph-data').textContent);
  const meta = data.meta;
  const byId = new Map(data.nodes.map(n => [n.id, n]));
  const adj = new Map();
  for (const l of data.links) {
    for (const end of [l.source, l.target]) {
      if (!adj.has(end)) adj.set(end, []);
      adj.get(end).push(l);
    }
  }
  const shown = new Set(data.nodes.filter(n => n.level <= meta.depth).map(n => n.id));
  let expandable = new Set();
  let selected = null;
  let drawing = 0, drawn = 0;
  let settled = false; // the layout has stopped moving

  // shortName labels a certificate by its subject, not its 64-digit hash.
  const shortName = n => (n.type === 'cert' ? (n.attrs && n.attrs.subject_cn) || n.id.slice(0, 12) + '…' : n.id);
  const esc = s => String(s).replace(/[&<>"']/g, c => '&#' + c.charCodeAt(0) + ';');
  const other = (l, id) => (l.source === id ? l.target : l.source);
  const hiddenNeighbours = id => (adj.get(id) || []).filter(l => !shown.has(other(l, id))).length;

  const graph = new ForceGraph(document.getElementById('graph'))
    .nodeId('id')
    .nodeLabel(n => esc(n.type + ': ' + shortName(n)))
    .nodeCanvasObject((n, ctx, scale) => {
      drawing++;
      const r = n.id === selected ? 7 : 4.5;
      ctx.beginPath();
      ctx.arc(n.x, n.y, r, 0, 2 * Math.PI);
      ctx.fillStyle = TYPE_COLORS[n.type] || '#999';
      ctx.fill();
      if (expandable.has(n.id) || n.id === selected) {
        ctx.lineWidth = 1.5 / scale;
        ctx.strokeStyle = n.id === selected ? '#d62728' : '#222';
        ctx.stroke();
      }
      if (scale > 2.5 || n.id === selected) {
        ctx.font = (11 / scale) + 'px system-ui, sans-serif';
        ctx.fillStyle = '#222';
        ctx.fillText(shortName(n), n.x + r + 2 / scale, n.y + 3 / scale);
      }
    })
    .nodePointerAreaPaint((n, color, ctx) => {
      ctx.fillStyle = color;
      ctx.beginPath();
      ctx.arc(n.x, n.y, 7, 0, 2 * Math.PI);
      ctx.fill();
    })
    .linkColor(() => 'rgba(0,0,0,0.25)')
    .linkDirectionalArrowLength(3)
    .linkDirectionalArrowRelPos(1)
    .linkLabel(l => esc(l.type))
    .onRenderFramePre(() => { drawing = 0; })
    .onRenderFramePost(() => { drawn = drawing; })
    .onNodeClick(n => { select(n.id); expand(n.id); })
    .onEngineStop(() => { settled = true; })
    .cooldownTicks(300);

  // refresh gives the layout the shown nodes and the links between them;
  // node objects are reused, so nodes keep their places.
  function refresh() {
    const nodes = [...shown].map(id => byId.get(id));
    const links = data.links.filter(l => shown.has(l.source) && shown.has(l.target))
      .map(l => ({ source: l.source, target: l.target, type: l.type }));
    expandable = new Set(nodes.filter(n => hiddenNeighbours(n.id) > 0).map(n => n.id));
    settled = false;
    graph.graphData({ nodes, links });
    document.getElementById('status').textContent =
      nodes.length + ' of ' + data.nodes.length + ' nodes shown, ' + links.length + ' edges' +
      (expandable.size ? ' · outlined nodes have hidden neighbours: click to expand' : '');
  }

  // expand shows id's hidden neighbours, placed around it.
  function expand(id) {
    const at = byId.get(id);
    let added = 0;
    for (const l of adj.get(id) || []) {
      const o = other(l, id);
      if (shown.has(o)) continue;
      shown.add(o);
      added++;
      const n = byId.get(o);
      if (at.x !== undefined && n.x === undefined) {
        n.x = at.x + (Math.random() - 0.5) * 20;
        n.y = at.y + (Math.random() - 0.5) * 20;
      }
    }
    if (added) refresh();
    return added;
  }

  function select(id) {
    selected = id;
    const n = byId.get(id);
    const rows = [['type', n.type], [n.type === 'cert' ? 'SPKI SHA-256' : 'name', n.id]];
    for (const [k, v] of Object.entries(n.attrs || {})) rows.push([k, v]);
    const links = adj.get(id) || [];
    rows.push(['edges', links.length + ' (' + hiddenNeighbours(id) + ' to hidden nodes)']);
    document.getElementById('details').innerHTML =
      rows.map(([k, v]) => '<dt>' + esc(k) + '</dt><dd>' + esc(v) + '</dd>').join('');
  }

  // find selects the node whose ID is q, or else the first that contains
  // it, shows it, and centres the view on it.
  function find(q) {
    q = q.trim().toLowerCase();
    if (!q) return null;
    let hit = byId.get(q);
    if (!hit) hit = data.nodes.find(n => n.id.toLowerCase().includes(q));
    if (!hit) {
      document.getElementById('status').textContent = 'no node matches "' + q + '"';
      return null;
    }
    if (!shown.has(hit.id)) { shown.add(hit.id); refresh(); }
    select(hit.id);
    setTimeout(() => {
      if (hit.x !== undefined) { graph.centerAt(hit.x, hit.y, 400); graph.zoom(4, 400); }
    }, 60);
    return hit.id;
  }

  document.getElementById('find').addEventListener('submit', e => {
    e.preventDefault();
    find(document.getElementById('search').value);
  });

  const counts = {};
  for (const n of data.nodes) counts[n.type] = (counts[n.type] || 0) + 1;
  document.getElementById('legend').innerHTML = Object.keys(TYPE_COLORS).map(t =>
    '<li><span style="background:' + TYPE_COLORS[t] + '"></span>' + esc(t) + ' (' + (counts[t] || 0) + ')</li>').join('');
  document.getElementById('title').textContent = meta.host
    ? 'Neighbourhood of ' + meta.host + ' (' + meta.depth + (meta.depth === 1 ? ' hop)' : ' hops)')
    : 'spyder graph';
  if (meta.truncated) {
    document.getElementById('note').textContent = meta.host
      ? 'The neighbourhood holds at least ' + meta.total_nodes + ' nodes; this page has the first ' + data.nodes.length +
        ' (--max-nodes ' + meta.max_nodes + ').'
      : 'The graph has ' + meta.total_nodes + ' nodes; this page shows the first ' + data.nodes.length +
        ' (--max-nodes ' + meta.max_nodes + '). Use --host H --depth N to look at one neighbourhood.';
  }
  refresh();
  if (meta.host) select(byId.has(meta.host) ? meta.host : data.nodes[0].id);

  window.spyderView = {
    graph, find, expand,
    shownCount: () => shown.size,
    drawnCount: () => drawn,
    selected: () => selected,
    settled: () => settled,
    isShown: id => shown.has(id),
  };
})();
