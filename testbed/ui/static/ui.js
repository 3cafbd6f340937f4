// The run page: draws one state (DCs, WAN directions, plan, progress).
// Live: states arrive by server-sent events and the controls send console
// commands.  Replay: the states are inline and a slider picks one.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("config").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  // Room beside the DCs for their names, wider than tall: names run sideways.
  var W = 1000, H = 600, PADX = 170, PADY = 70, OFFSET = 7, RADIUS = 26;
  var selected = null;          // "src>dst" picked on the map

  function $(id) { return document.getElementById(id); }

  function mbit(bps) {
    if (bps === null || bps === undefined) return "-";
    var v = bps / 1e6;
    return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + " Mbit/s";
  }
  function ms(s) {
    if (s === null || s === undefined) return "-";
    return s >= 1 ? s.toFixed(2) + " s" : (s * 1e3).toFixed(0) + " ms";
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function pct(x) { return x === null || x === undefined ? "-" : (x * 100).toFixed(0) + "%"; }
  function secs(s) { return s === null || s === undefined ? "-" : s.toFixed(1) + " s"; }

  // Green when idle, red when full: hue 120 -> 0 over utilisation 0 -> 1.
  function colour(u) {
    if (u === null || u === undefined) return "#9aa3b2";
    var x = Math.max(0, Math.min(1, u));
    return "hsl(" + (120 * (1 - x)).toFixed(0) + ", 68%, " + (42 + 6 * x).toFixed(0) + "%)";
  }

  function el(tag, attrs, text) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function place(dc) { return [PADX + dc.x * (W - 2 * PADX), PADY + dc.y * (H - 2 * PADY)]; }

  function tooltip(l) {
    return l.src + " \u2192 " + l.dst + "\nconfigured " + mbit(l.rate) +
      (l.up ? "" : " (down)") + "\nmeasured " + mbit(l.throughput) +
      " (" + pct(l.utilisation) + ")\nprobe estimate " + mbit(l.estimate) +
      "\ndelay " + ms(l.delay) + ", loss " + pct(l.loss);
  }

  function drawMap(state) {
    var svg = $("map");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var defs = el("defs", {});
    svg.appendChild(defs);
    var where = {};
    state.dcs.forEach(function (dc) { where[dc.name] = place(dc); });
    state.links.forEach(function (l, i) {
      var a = where[l.src], b = where[l.dst];
      var dx = b[0] - a[0], dy = b[1] - a[1], len = Math.sqrt(dx * dx + dy * dy) || 1;
      var ux = dx / len, uy = dy / len, nx = -uy * OFFSET, ny = ux * OFFSET;
      var x1 = a[0] + ux * (RADIUS + 4) + nx, y1 = a[1] + uy * (RADIUS + 4) + ny;
      var x2 = b[0] - ux * (RADIUS + 12) + nx, y2 = b[1] - uy * (RADIUS + 12) + ny;
      var c = l.up ? colour(l.utilisation) : "#a33";
      var marker = el("marker", {id: "arrow" + i, viewBox: "0 0 10 10", refX: "2", refY: "5",
                                 markerWidth: "4", markerHeight: "4", orient: "auto"});
      marker.appendChild(el("path", {d: "M0,0 L10,5 L0,10 z", fill: c}));
      defs.appendChild(marker);
      var key = l.src + ">" + l.dst;
      var g = el("g", {"class": "dir" + (l.up ? "" : " down") + (key === selected ? " selected" : ""),
                       "data-dir": key});
      g.appendChild(el("title", {}, tooltip(l)));
      g.appendChild(el("line", {x1: x1, y1: y1, x2: x2, y2: y2, stroke: c,
                                "marker-end": "url(#arrow" + i + ")"}));
      // The label sits beside its own line, 40% of the way along.
      var lx = x1 + (x2 - x1) * 0.4 + nx * 2.6, ly = y1 + (y2 - y1) * 0.4 + ny * 2.6 + 4;
      var text = (l.throughput === null ? "-" : (l.throughput / 1e6).toFixed(1)) + " / " +
        (l.rate / 1e6).toFixed(l.rate < 1e7 ? 1 : 0);
      g.appendChild(el("text", {x: lx, y: ly, "text-anchor": "middle"}, l.up ? text : "down"));
      g.addEventListener("click", function () { select(key); });
      svg.appendChild(g);
    });
    var mid = [0, 0];
    state.dcs.forEach(function (dc) {
      mid[0] += where[dc.name][0] / state.dcs.length;
      mid[1] += where[dc.name][1] / state.dcs.length;
    });
    state.dcs.forEach(function (dc) {
      var p = where[dc.name];
      var g = el("g", {"class": "dc", "data-dc": dc.name});
      g.appendChild(el("title", {}, dc.name + ": " + dc.servers + " servers, " + dc.workers + " workers"));
      g.appendChild(el("circle", {cx: p[0], cy: p[1], r: RADIUS}));
      // The name goes outwards, away from the middle of the drawing, where links run.
      var ox = p[0] - mid[0], oy = p[1] - mid[1], on = Math.sqrt(ox * ox + oy * oy) || 1;
      var side = Math.abs(ox / on) > 0.6, anchor = side ? (ox > 0 ? "start" : "end") : "middle";
      var tx = side ? p[0] + (ox > 0 ? 1 : -1) * (RADIUS + 8) : p[0];
      var ty = side ? p[1] - 4 : p[1] + (oy > 0 ? RADIUS + 20 : -RADIUS - 26);
      g.appendChild(el("text", {x: tx, y: ty, "text-anchor": anchor}, dc.name));
      g.appendChild(el("text", {x: tx, y: ty + 16, "text-anchor": anchor, "class": "hosts"},
                           plural(dc.servers, "server") + " \u00b7 " + plural(dc.workers, "worker")));
      svg.appendChild(g);
    });
    svg.appendChild(el("text", {x: W - 10, y: H - 10, "text-anchor": "end", "font-size": 12,
                                fill: "#5a6478"}, "labels: measured / configured Mbit/s"));
  }

  function drawTable(state) {
    var body = $("links").tBodies[0];
    body.innerHTML = "";
    state.links.forEach(function (l) {
      var tr = document.createElement("tr");
      tr.dataset.dir = l.src + ">" + l.dst;
      if (!l.up) tr.className = "down";
      var cells = [
        ["name", l.src + " \u2192 " + l.dst], ["rate", mbit(l.rate)],
        ["throughput", mbit(l.throughput)], ["utilisation", pct(l.utilisation)],
        ["estimate", mbit(l.estimate)], ["delay", ms(l.delay)], ["loss", pct(l.loss)],
        ["state", l.up ? "up" : "down"]];
      cells.forEach(function (c) {
        var td = document.createElement("td");
        td.className = c[0];
        if (c[0] === "utilisation" && l.utilisation !== null) {
          var bar = document.createElement("span");
          bar.className = "bar";
          bar.style.width = Math.round(40 * Math.min(1, l.utilisation)) + "px";
          bar.style.background = colour(l.utilisation);
          td.appendChild(bar);
        }
        td.appendChild(document.createTextNode(c[1]));
        tr.appendChild(td);
      });
      tr.addEventListener("click", function () { select(tr.dataset.dir); });
      body.appendChild(tr);
    });
  }

  function drawProgress(state) {
    var p = state.progress, dl = $("progress");
    var rows = [
      ["iteration", p.iteration + (p.max_iterations ? " of " + p.max_iterations : "")],
      ["accuracy", p.accuracy === null ? "-" : p.accuracy.toFixed(3) +
        (p.target_accuracy ? " (target " + p.target_accuracy + ")" : "")],
      ["sync time", p.sync === null ? "-" : ms(p.sync) + " per iteration"],
      ["lower bound", ms(p.sync_bound) + (p.sync && p.sync_bound ?
        " (sync is " + (p.sync / p.sync_bound).toFixed(2) + "\u00d7)" : "")],
      ["partial-sum bound", ms(p.sync_t_lb)]];
    dl.innerHTML = "";
    rows.forEach(function (r) {
      var dt = document.createElement("dt"), dd = document.createElement("dd");
      dt.textContent = r[0];
      dd.textContent = r[1];
      dd.id = "progress-" + r[0].replace(/ /g, "-");
      dl.appendChild(dt);
      dl.appendChild(dd);
    });
  }

  // x runs over `span` seconds: the whole run in a replay, so the curve grows with the slider.
  function drawAccuracy(history, until, span) {
    var svg = $("accuracy");
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var pts = history.filter(function (h) { return h[0] <= until; });
    if (!pts.length) return;
    var end = Math.max(span, 1);
    var d = pts.map(function (h, i) {
      return (i ? "L" : "M") + (300 * h[0] / end).toFixed(1) + "," + (78 - 74 * h[1]).toFixed(1);
    }).join(" ");
    svg.appendChild(el("path", {d: d, fill: "none", stroke: "#2f4a73", "stroke-width": 2,
                                "vector-effect": "non-scaling-stroke"}));
  }

  function drawPlan(state) {
    var plan = state.plan, box = $("plan");
    box.innerHTML = "";
    var head = document.createElement("div");
    head.className = "why";
    head.textContent = (plan.overlay ? plan.overlay + ": " : "") + plan.why +
      (plan.changed_at !== null ? ", at " + secs(plan.changed_at) : "");
    box.appendChild(head);
    function edges(list) {
      return list.map(function (e) { return e[0] + "\u2192" + e[1]; }).join(", ");
    }
    plan.trees.forEach(function (t) {
      var div = document.createElement("div");
      div.className = "root";
      var b = document.createElement("b");
      b.textContent = "root " + t.root + (t.share !== null && t.share !== undefined ?
        " (" + pct(t.share) + " of the model)" : "");
      div.appendChild(b);
      [["aggregation", t.aggregation], ["distribution", t.distribution]].forEach(function (x) {
        if (!x[1].length) return;
        var p = document.createElement("div");
        p.className = "edges";
        p.textContent = x[0] + ": " + edges(x[1]);
        div.appendChild(p);
      });
      box.appendChild(div);
    });
    if (plan.routes && plan.routes.length) {
      var r = document.createElement("div");
      r.className = "edges";
      r.textContent = "auxiliary routes: " + JSON.stringify(plan.routes);
      box.appendChild(r);
    }
  }

  function render(state) {
    $("title").textContent = state.name || "run";
    var status = config.mode === "live" ? "live" : state.status || "";
    $("status").textContent = status;
    $("status").className = "badge " + status;
    $("clock").textContent = secs(state.elapsed) + " since the network came up";
    drawMap(state);
    drawTable(state);
    drawProgress(state);
    drawPlan(state);
    drawAccuracy(state.progress.history, state.elapsed,
                 config.mode === "live" ? state.elapsed : config.replay.frames[config.replay.frames.length - 1].elapsed);
    if (config.mode === "live") fillControls(state);
  }

  // ------------------------------------------------------------ controls

  function option(select, value, label) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = label;
    select.appendChild(o);
  }

  function fillControls(state) {
    var dir = $("link-dir");
    if (!dir.options.length) {
      state.links.forEach(function (l, i) {
        if (i % 2 === 0) option(dir, l.src + " " + l.dst, l.src + " \u2194 " + l.dst + " (both ways)");
        option(dir, l.src + " " + l.dst + " oneway", l.src + " \u2192 " + l.dst);
      });
    }
    var target = $("speed-target");
    if (!target.options.length) {
      state.dcs.forEach(function (dc) { option(target, dc.name, dc.name + " (all its workers)"); });
      Object.keys(state.speeds).forEach(function (w) {
        option(target, w, w + " (now " + state.speeds[w] + ")");
      });
    }
  }

  function select(key) {
    selected = key;
    var parts = key.split(">");
    var dir = $("link-dir");
    if (dir.options.length) dir.value = parts[0] + " " + parts[1] + " oneway";
    if (last) drawMap(last);
  }

  function words(id, name) {
    var v = $(id).value.trim();
    return v ? " " + name + " " + v : "";
  }

  // The same command lines the console takes; the reply is what it prints.
  function send(line) {
    var reply = $("reply");
    reply.className = "";
    reply.textContent = "\u2026 " + line;
    fetch("command?token=" + encodeURIComponent(config.token), {
      method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({line: line})
    }).then(function (r) { return r.json(); }).then(function (r) {
      reply.className = r.ok ? "" : "error";
      reply.textContent = r.ok ? r.text : "error: " + r.text;
    }).catch(function (e) {
      reply.className = "error";
      reply.textContent = "error: the run does not answer (" + e + ")";
    });
  }

  function linkCommand(rest) {
    var v = $("link-dir").value.split(" ");
    return "link " + v[0] + " " + v[1] + rest + (v[2] ? " oneway" : "");
  }

  function wireControls() {
    $("controls").hidden = false;
    $("link-apply").addEventListener("click", function () {
      send(linkCommand(words("link-bw", "bw") + words("link-delay", "delay") +
                       words("link-loss", "loss")));
    });
    $("link-down").addEventListener("click", function () { send(linkCommand(" down")); });
    $("link-up").addEventListener("click", function () { send(linkCommand(" up")); });
    $("speed-apply").addEventListener("click", function () {
      send("speed " + $("speed-target").value + " " + ($("speed-factor").value.trim() || "?"));
    });
  }

  // ------------------------------------------------------------ sources

  var last = null;

  function show(state) { last = state; render(state); }

  if (config.mode === "live") {
    wireControls();
    var stream = new EventSource("events?token=" + encodeURIComponent(config.token));
    stream.onmessage = function (m) { show(JSON.parse(m.data)); };
    stream.onerror = function () {
      $("status").textContent = "disconnected";
      $("status").className = "badge disconnected";
    };
  } else {
    var frames = config.replay.frames, history = frames[frames.length - 1].progress.history;
    var slider = $("slider");
    $("replay").hidden = false;
    slider.max = frames.length - 1;
    slider.value = frames.length - 1;
    var pick = function () {
      var f = frames[+slider.value];
      f.progress.history = history;
      $("slider-time").textContent = secs(f.elapsed) + " / " + secs(frames[frames.length - 1].elapsed);
      show(f);
    };
    slider.addEventListener("input", pick);
    pick();
  }
})();
