/* tune report: draws the page from the JSON blob in #tune-data. Hand-written, no library:
 * every chart is a <canvas> and each trial is one path on it (one batched stroke per
 * status), so 5,000 trials stay fast; the table is built as one string. When the page is
 * drawn it sets data-* attributes on <body> (ready, curves, trials-with-results, rows,
 * rows-shown, extra-columns, clipped (curves with points outside the y range), scatters,
 * parallel, errors, render-ms; for Population Based Training lineage, earlier, schedule,
 * schedule-charts, exploits; for several objectives front (the Pareto front's size),
 * front-charts, front-drawn, infeasible-drawn, hv-points; parallel-axes) for the tests in
 * tests/test_report.c. */
(function () {
  'use strict';
  var t0 = performance.now();
  var D = JSON.parse(document.getElementById('tune-data').textContent);
  var E = D.exp, T = D.trials, P = D.params || [];
  /* The shown metric's order: the experiment's mode for its own metric, --mode or a
   * guess from the name for another one (tune report says which). */
  var MODE = D.mode || E.mode;
  var MODE_MAX = MODE === 'max';
  var METRIC = D.metric || 'metric';
  var COL = {
    finished: '#2563eb', stopped: '#f08c2e', error: '#dc2626', running: '#16a34a',
    other: '#9333ea', best: '#111827', grid: '#eceef2', axis: '#9ca3af', text: '#4b5563',
    cutoff: '#b91c1c', rung: '#c7cbd3'
  };
  var LABEL = {
    finished: 'finished', stopped: 'stopped early', error: 'error', running: 'running',
    other: 'paused or pending'
  };
  /* Population Based Training: each exploit (lineage row, oldest first) and the curves of
   * attempts a trial left behind when it was exploited (earlier). */
  var LIN = D.lineage || [], EARLIER = D.earlier || [];
  var byNo = {};
  T.forEach(function (t) { byNo[t.no] = t; });
  COL.lineage = '#7c3aed';
  var FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif';
  var body = document.body;
  var counts = {};
  var selected = -1;
  T.forEach(function (t, i) { t.i = i; });

  function $(id) { return document.getElementById(id); }
  function esc(s) {
    return String(s).replace(/[&<>"']/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c];
    });
  }
  function fin(v) { return typeof v === 'number' && isFinite(v); }
  function fmt(v) {
    if (v === null || v === undefined || (typeof v === 'number' && !isFinite(v))) return '\u2013';
    if (typeof v !== 'number') return String(v);
    var a = Math.abs(v);
    if (v !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(2).replace('e+', 'e');
    return String(parseFloat(v.toPrecision(5)));
  }
  function fmtTick(v) {
    var a = Math.abs(v);
    if (v !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(0).replace('e+', 'e');
    return String(parseFloat(v.toPrecision(3)));
  }
  function fmtDur(s) {
    if (!fin(s) || s < 0) return '\u2013';
    if (s < 60) return s.toFixed(1) + ' s';
    if (s < 3600) return Math.floor(s / 60) + 'm ' + ('0' + Math.floor(s % 60)).slice(-2) + 's';
    return Math.floor(s / 3600) + 'h ' + ('0' + Math.floor((s / 60) % 60)).slice(-2) + 'm';
  }
  function fmtDate(s) { return fin(s) ? new Date(s * 1000).toLocaleString() : '\u2013'; }
  function fmtVal(v) {
    if (typeof v === 'number') return fmt(v);
    if (typeof v === 'string') return v;
    return JSON.stringify(v);
  }
  function klass(t) {
    if (t.es) return 'stopped';
    if (t.st === 'ERROR') return 'error';
    if (t.st === 'TERMINATED') return 'finished';
    if (t.st === 'RUNNING') return 'running';
    return 'other';
  }
  function better(a, b) {
    if (!fin(a)) return false;
    if (!fin(b)) return true;
    return MODE_MAX ? a > b : a < b;
  }

  /* ---- scales --------------------------------------------------------------------- */
  /* A numeric axis: linear or log10, mapped to pixels [p0, p1]. With clamp, a value
   * outside (or +-Infinity, or <= 0 on a log axis) maps to the end it left by, and
   * out(v) says which (1 beyond p1, -1 beyond p0, 0 inside). */
  function scale(lo, hi, log, p0, p1, pad, clamp) {
    var a = log ? Math.log10(lo) : lo, b = log ? Math.log10(hi) : hi;
    if (!(b > a)) { var d = log ? 0.3 : (Math.abs(a) > 0 ? Math.abs(a) * 0.1 : 0.5); a -= d; b += d; }
    var m = (b - a) * (pad || 0);
    a -= m; b += m;
    return {
      log: log, a: a, b: b, p0: p0, p1: p1,
      map: function (v) {
        if (typeof v !== 'number' || isNaN(v)) return NaN; /* null (NaN in the data) is no 0 */
        if (clamp) {
          var o = this.out(v);
          if (o) return o > 0 ? p1 : p0;
        }
        if (log && !(v > 0)) return NaN;
        var f = log ? Math.log10(v) : v;
        return p0 + (f - a) / (b - a) * (p1 - p0);
      },
      out: function (v) {
        if (!clamp || typeof v !== 'number' || isNaN(v)) return 0;
        if (log && !(v > 0)) return -1;
        var f = log ? Math.log10(v) : v;
        return f > b ? 1 : f < a ? -1 : 0;
      },
      ticks: function (n) { return log ? logTicks(a, b) : linTicks(a, b, n || 6); }
    };
  }
  function linTicks(a, b, n) {
    var raw = (b - a) / n, p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    var step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p, out = [];
    for (var v = Math.ceil(a / step) * step; v <= b + step * 1e-9; v += step)
      out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
  function logTicks(a, b) {
    var out = [], d0 = Math.floor(a), d1 = Math.ceil(b), dec = d1 - d0;
    var mult = dec <= 1 ? [1, 2, 3, 5, 7] : dec <= 3 ? [1, 2, 5] : [1];
    var every = dec > 8 ? Math.ceil(dec / 8) : 1;
    for (var d = d0; d <= d1; d++) {
      if ((d - d0) % every) continue;
      for (var i = 0; i < mult.length; i++) {
        var v = mult[i] * Math.pow(10, d), f = Math.log10(v);
        if (f >= a - 1e-9 && f <= b + 1e-9) out.push(v);
      }
    }
    if (out.length < 2) return linTicks(Math.pow(10, a), Math.pow(10, b), 4).filter(function (v) { return v > 0; });
    return out;
  }
  /* Log when asked, or (auto) when every value is positive and they span ratio or more. */
  function wantLog(mode, lo, hi, ratio) {
    if (mode === 'log') return lo > 0;
    if (mode === 'linear') return false;
    return lo > 0 && hi / lo >= ratio;
  }
  function extent(vals, positiveOnly) {
    var lo = Infinity, hi = -Infinity;
    for (var i = 0; i < vals.length; i++) {
      var v = vals[i];
      if (!fin(v) || (positiveOnly && v <= 0)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    return [lo, hi];
  }

  /* ---- canvas helpers ------------------------------------------------------------- */
  function setup(cv, h) {
    var r = window.devicePixelRatio || 1, w = cv.clientWidth || cv.parentNode.clientWidth || 800;
    cv.width = Math.round(w * r);
    cv.height = Math.round(h * r);
    cv.style.height = h + 'px';
    var c = cv.getContext('2d');
    c.setTransform(r, 0, 0, r, 0, 0);
    c.font = FONT;
    return { c: c, w: w, h: h };
  }
  function frame(c, xs, ys, box, xticks, yticks, xtitle, ytitle) {
    c.save();
    c.lineWidth = 1;
    c.strokeStyle = COL.grid;
    c.fillStyle = COL.text;
    c.textAlign = 'right';
    c.textBaseline = 'middle';
    yticks.forEach(function (v) {
      var y = Math.round(ys.map(v)) + 0.5;
      if (!(y >= box.t - 1 && y <= box.b + 1)) return;
      c.beginPath(); c.moveTo(box.l, y); c.lineTo(box.r, y); c.stroke();
      c.fillText(fmtTick(v), box.l - 6, y);
    });
    c.textAlign = 'center';
    c.textBaseline = 'top';
    if (xticks) {
      var lastRight = -Infinity;
      xticks.forEach(function (v) {
        var x = Math.round(xs.map(v)) + 0.5;
        if (!(x >= box.l - 1 && x <= box.r + 1)) return;
        c.beginPath(); c.moveTo(x, box.t); c.lineTo(x, box.b); c.stroke();
        var s = typeof v === 'number' ? fmtTick(v) : v, w = c.measureText(s).width;
        if (x - w / 2 > lastRight + 4) { c.fillText(s, x, box.b + 6); lastRight = x + w / 2; }
      });
    }
    c.strokeStyle = COL.axis;
    c.beginPath(); c.moveTo(box.l + 0.5, box.t); c.lineTo(box.l + 0.5, box.b + 0.5); c.lineTo(box.r, box.b + 0.5); c.stroke();
    if (xtitle) { c.fillStyle = COL.text; c.textAlign = 'right'; c.fillText(xtitle, box.r, box.b + 22); }
    if (ytitle) {
      c.save(); c.translate(12, (box.t + box.b) / 2); c.rotate(-Math.PI / 2);
      c.textAlign = 'center'; c.textBaseline = 'middle'; c.fillStyle = COL.text; c.fillText(ytitle, 0, 0);
      c.restore();
    }
    c.restore();
  }
  function cross(c, x, y, s) { c.moveTo(x - s, y - s); c.lineTo(x + s, y + s); c.moveTo(x - s, y + s); c.lineTo(x + s, y - s); }

  /* One tooltip for every chart; charts register the points they drew. */
  var tip = $('tip');
  function showTip(ev, html) {
    tip.innerHTML = html;
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 12, r = tip.getBoundingClientRect();
    if (x + r.width > window.innerWidth - 8) x = ev.clientX - r.width - 14;
    if (y + r.height > window.innerHeight - 8) y = ev.clientY - r.height - 12;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hideTip() { tip.hidden = true; }
  function nearest(px, py, n, mx, my, maxd) {
    var best = -1, bd = maxd * maxd;
    for (var i = 0; i < n; i++) {
      var dx = px[i] - mx, dy = py[i] - my, d = dx * dx + dy * dy;
      if (d < bd) { bd = d; best = i; }
    }
    return best;
  }
  function cfgText(t) {
    var out = [];
    for (var k in t.cfg) if (Object.prototype.hasOwnProperty.call(t.cfg, k)) out.push(esc(k) + '=' + esc(fmtVal(t.cfg[k])));
    return out.join('  ');
  }
  function trialTip(t, extra) {
    return '<b>' + esc(t.name) + '</b> \u00b7 ' + esc(LABEL[klass(t)]) + (D.best === t.i ? ' \u00b7 best' : '') +
      '<br>' + extra + '<br><span style="opacity:.8">' + cfgText(t) + '</span>';
  }

  /* ---- header ------------------------------------------------------------------- */
  function header() {
    var n = { finished: 0, stopped: 0, error: 0, running: 0, other: 0 }, results = 0, busy = 0;
    T.forEach(function (t) {
      n[klass(t)]++;
      results += t.n;
      if (fin(t.t0)) busy += (fin(t.t1) ? t.t1 : D.generated) - t.t0;
    });
    counts = n;
    var s = E.settings || {}, sc = s.scheduler || {};
    var badges = [['status', E.status], ['scheduler', E.scheduler], ['metric', METRIC + ' (' + MODE + (D.mode_guessed ? ', guessed from the name' : '') + ')'],
      ['x', E.time_attr]];
    if (D.mo) badges[2] = ['objectives', D.mo.objectives.map(function (o) { return o.metric + ' (' + o.mode + ')'; }).join(', ')];
    if (E.scheduler === 'asha')
      badges.push(['rungs', (D.milestones || []).map(fmt).join(' \u00b7 ') + (fin(sc.max_t) ? ' \u2192 ' + fmt(sc.max_t) : '')]);
    $('badges').innerHTML = badges.map(function (b) {
      return '<span class="badge">' + esc(b[0]) + ' <b>' + esc(b[1] === undefined || b[1] === null ? '\u2013' : b[1]) + '</b></span>';
    }).join('');
    var bt = D.best >= 0 ? T[D.best] : null;
    var parts = [];
    if (n.finished) parts.push(n.finished + ' finished');
    if (n.stopped) parts.push(n.stopped + ' stopped early');
    if (n.error) parts.push(n.error + ' errors');
    if (n.running) parts.push(n.running + ' running');
    if (n.other) parts.push(n.other + ' paused or pending');
    var stats = [
      ['trials', String(T.length) + (E.num_trials && E.num_trials !== T.length ? ' / ' + E.num_trials : ''), parts.join(', ')],
      ['best ' + METRIC, bt ? fmt(bt.last) : '\u2013', bt ? bt.name + ' (' + MODE + ', last result)' : 'no value yet'],
      ['results', String(results), 'reported by all trials'],
      ['wall time', fmtDur((fin(E.ended) ? E.ended : D.generated) - E.created), fmtDate(E.created)],
      ['trial time', fmtDur(busy), 'summed over trials']
    ];
    /* several objectives: no one best trial, the front's size instead */
    if (D.mo) stats[1] = ['Pareto front', String(D.mo.nfront), 'of ' + D.mo.n + ' trials with a result, ' + D.mo.feasible + ' feasible'];
    $('stats').innerHTML = stats.map(function (x) {
      return '<div class="stat"><div class="k">' + esc(x[0]) + '</div><div class="v">' + esc(x[1]) +
        '</div><div class="s">' + esc(x[2]) + '</div></div>';
    }).join('');
  }

  /* ---- learning curves ------------------------------------------------------------ */
  var curveState = { ymode: 'auto', xmode: 'auto', stopped: true, hit: null };
  /* The y range for a y mode (auto, log, linear) from D.yrange, as {s, log}; null when the
   * data has none (nothing finite to draw). */
  function ySide(mode) {
    var R = D.yrange;
    if (!R) return null;
    var lg = mode === 'log' ? !!R.log : mode === 'linear' ? false : R.ylog && !!R.log;
    var s = lg ? R.log : R.lin;
    return s && fin(s.lo) && fin(s.hi) ? { s: s, log: lg } : null;
  }
  function drawCurves() {
    var cv = $('curves'), g = setup(cv, 460), c = g.c;
    var box = { l: 66, r: g.w - 18, t: 16, b: g.h - 42 };
    var vis = T.filter(function (t) { return t.n > 0 && (curveState.stopped || !t.es || t.i === D.best); });
    var xsAll = [], ysAll = [];
    vis.forEach(function (t) {
      for (var k = 0; k < t.n; k++) if (fin(t.x[k]) && fin(t.y[k])) { xsAll.push(t.x[k]); ysAll.push(t.y[k]); }
    });
    var shown = {};
    vis.forEach(function (t) { shown[t.no] = true; });
    var early = EARLIER.filter(function (s) { return shown[s.t]; });
    early.forEach(function (s) {
      s.p.forEach(function (q) { if (fin(q[0]) && fin(q[1])) { xsAll.push(q[0]); ysAll.push(q[1]); } });
    });
    var ms = D.milestones || [];
    var ex = extent(xsAll), exPos = extent(xsAll, true), ey = extent(ysAll), eyPos = extent(ysAll, true);
    var drawn = 0;
    if (!xsAll.length) {
      c.fillStyle = COL.text; c.textAlign = 'center';
      c.fillText('No results with a value for ' + METRIC + ' yet.', g.w / 2, g.h / 2);
      curveState.hit = null;
      counts.curves = 0;
      return;
    }
    var xlog = curveState.xmode === 'auto' ? (ms.length > 1 && ex[0] > 0 && ex[1] / ex[0] >= 8) : wantLog(curveState.xmode, exPos[0], ex[1], 1);
    var ylog, ys, yr = ySide(curveState.ymode);
    if (yr) {
      /* tune's range (report.c): the bulk of the curves; what lies outside is drawn on
       * the edge and named under the chart */
      ylog = yr.log;
      ys = scale(yr.s.lo, yr.s.hi, ylog, box.b, box.t, 0.04, true);
    } else {
      ylog = wantLog(curveState.ymode, ey[0] > 0 ? ey[0] : (curveState.ymode === 'log' ? eyPos[0] : ey[0]), ey[1], 10);
      ys = scale(ylog ? eyPos[0] : ey[0], ey[1], ylog, box.b, box.t, 0.04);
    }
    var xs = scale(xlog ? exPos[0] : ex[0], ex[1], xlog, box.l, box.r, 0.02);
    frame(c, xs, ys, box, xs.ticks(8), ys.ticks(6), E.time_attr + (xlog ? ' (log)' : ''), METRIC + (ylog ? ' (log)' : ''));

    /* Rung milestones: dashed verticals, labelled at the top. */
    c.save();
    c.setLineDash([4, 4]);
    c.strokeStyle = COL.rung;
    c.fillStyle = COL.axis;
    c.textAlign = 'center';
    c.textBaseline = 'bottom';
    ms.forEach(function (m, i) {
      var x = Math.round(xs.map(m)) + 0.5;
      if (!(x >= box.l && x <= box.r)) return;
      c.beginPath(); c.moveTo(x, box.t); c.lineTo(x, box.b); c.stroke();
      c.fillText('rung ' + i, x, box.t - 2);
    });
    c.restore();

    c.save();
    c.beginPath(); c.rect(box.l, box.t - 4, box.r - box.l + 4, box.b - box.t + 8); c.clip();
    var order = ['stopped', 'other', 'running', 'error', 'finished'];
    var style = {
      stopped: [COL.stopped, 0.45, 1], other: [COL.other, 0.8, 1.2], running: [COL.running, 0.9, 1.4],
      error: [COL.error, 0.8, 1.2], finished: [COL.finished, 0.85, 1.4]
    };
    /* Thinner, fainter lines read better with thousands of trials: the alpha falls with
     * how many curves of a kind overlap, down to a floor that still shows each. */
    var dense = vis.length > 400;
    var nOf = {};
    vis.forEach(function (t) { var k = klass(t); nOf[k] = (nOf[k] || 0) + 1; });
    var npts = 0;
    vis.forEach(function (t) { npts += t.n; });
    var hx = new Float32Array(npts), hy = new Float32Array(npts), ht = new Int32Array(npts), hk = new Int32Array(npts), nh = 0;
    order.forEach(function (cls) {
      var st = style[cls];
      c.beginPath();
      var dots = [];
      vis.forEach(function (t) {
        if (klass(t) !== cls) return;
        var ti = t.i, started = false, any = 0;
        for (var k = 0; k < t.n; k++) {
          var x = xs.map(t.x[k]), y = ys.map(t.y[k]);
          if (!fin(x) || !fin(y)) { started = false; continue; }
          if (started) c.lineTo(x, y); else c.moveTo(x, y);
          started = true;
          any++;
          hx[nh] = x; hy[nh] = y; ht[nh] = ti; hk[nh] = k; nh++;
        }
        if (any === 1) dots.push([hx[nh - 1], hy[nh - 1]]);
        if (any) drawn++;
      });
      c.strokeStyle = st[0];
      c.globalAlpha = Math.max(cls === 'stopped' ? 0.05 : 0.25, Math.min(st[1], 40 / (nOf[cls] || 1)));
      c.lineWidth = dense ? Math.max(0.8, st[2] - 0.4) : st[2];
      c.lineJoin = 'round';
      c.stroke();
      /* With few trials and points, each result is marked. */
      if (vis.length <= 50 && npts <= 50 * 40) {
        c.beginPath();
        vis.forEach(function (t) {
          if (klass(t) !== cls) return;
          for (var k = 0; k < t.n; k++) {
            var x = xs.map(t.x[k]), y = ys.map(t.y[k]);
            if (fin(x) && fin(y)) { c.moveTo(x + 1.8, y); c.arc(x, y, 1.8, 0, 2 * Math.PI); }
          }
        });
        c.fillStyle = st[0];
        c.fill();
      }
      /* A trial with one point (stopped at the first rung) is a dot, not a line. */
      c.fillStyle = st[0];
      c.globalAlpha = Math.max(0.15, Math.min(0.9, 60 / (nOf[cls] || 1)));
      c.beginPath();
      dots.forEach(function (d) { c.moveTo(d[0] + 3, d[1]); c.arc(d[0], d[1], 3, 0, 2 * Math.PI); });
      c.fill();
      c.globalAlpha = 1;
    });

    /* Points outside the range: a triangle on the edge where each curve leaves it. */
    var nclip = 0;
    c.save();
    vis.forEach(function (t) {
      var was = 0, any = false;
      for (var k = 0; k < t.n; k++) {
        var o = ys.out(t.y[k]), x = xs.map(t.x[k]);
        if (o && o !== was && fin(x)) {
          var y = o > 0 ? box.t : box.b;
          c.beginPath();
          c.moveTo(x, y + (o > 0 ? -5 : 5)); c.lineTo(x - 5, y + (o > 0 ? 4 : -4)); c.lineTo(x + 5, y + (o > 0 ? 4 : -4)); c.closePath();
          c.fillStyle = COL[klass(t)]; c.globalAlpha = 0.9; c.fill();
          any = true;
        }
        was = o;
      }
      if (any) nclip++;
    });
    c.restore();
    counts.clipped = nclip;
    var note = yr ? [yr.s.above_note, yr.s.below_note].filter(function (x) { return x; }) : [];
    if (note.length && D.yrange.ylim === 'auto')
      note.push('(the y range is the curves\u2019 bulk; tune report --ylim full spans every finite value, --ylim LO:HI sets it)');
    $('curves-note').textContent = note.join(' ');

    lineageOnCurves(c, xs, ys, early, shown);

    /* Where trials were stopped (x at the value the scheduler judged), and each rung's
     * last cutoff as a short red bar. */
    if (curveState.stopped) {
      c.beginPath();
      T.forEach(function (t) {
        if (!t.stop || !t.n) return;
        var x = xs.map(t.stop[0]), y = ys.map(t.stop[1]);
        if (fin(x) && fin(y)) cross(c, x, y, 2.5);
      });
      c.strokeStyle = '#c2410c'; c.globalAlpha = Math.max(0.08, Math.min(0.7, 40 / (counts.stopped || 1))); c.lineWidth = 1; c.stroke(); c.globalAlpha = 1;
    }
    (D.rungs || []).forEach(function (r) {
      if (!fin(r.cut) || ys.out(r.cut)) return;
      var x = xs.map(r.m), y = ys.map(r.cut);
      if (!fin(x) || !fin(y)) return;
      /* Left of the milestone, so that the values judged there stay in sight. */
      c.strokeStyle = '#fff'; c.lineWidth = 5;
      c.beginPath(); c.moveTo(x - 18, y); c.lineTo(x - 4, y); c.stroke();
      c.strokeStyle = COL.cutoff; c.lineWidth = 2.5;
      c.beginPath(); c.moveTo(x - 18, y); c.lineTo(x - 4, y); c.stroke();
    });

    /* The best trial on top of everything. */
    if (D.best >= 0 && T[D.best].n) {
      var bt = T[D.best];
      var path = function () {
        c.beginPath();
        var started = false, lx = NaN, ly = NaN;
        for (var k = 0; k < bt.n; k++) {
          var x = xs.map(bt.x[k]), y = ys.map(bt.y[k]);
          if (!fin(x) || !fin(y)) { started = false; continue; }
          if (started) c.lineTo(x, y); else c.moveTo(x, y);
          started = true; lx = x; ly = y;
        }
        return [lx, ly];
      };
      path(); c.strokeStyle = '#fff'; c.lineWidth = 5.5; c.lineJoin = 'round'; c.stroke();
      var end = path(); c.strokeStyle = COL.best; c.lineWidth = 2.6; c.stroke();
      if (fin(end[0])) {
        c.beginPath(); c.arc(end[0], end[1], 4.5, 0, 2 * Math.PI);
        c.fillStyle = COL.best; c.fill(); c.strokeStyle = '#fff'; c.lineWidth = 1.5; c.stroke();
        c.font = '600 ' + FONT;
        var label = 'best: ' + bt.name + ' (' + fmt(bt.last) + ')';
        var lw = c.measureText(label).width;
        var tx = Math.min(end[0] + 8, box.r - lw - 2), ty = end[1] - 12 < box.t + 8 ? end[1] + 14 : end[1] - 12;
        c.fillStyle = 'rgba(255,255,255,.85)'; c.fillRect(tx - 3, ty - 8, lw + 6, 16);
        c.fillStyle = COL.best; c.textAlign = 'left'; c.textBaseline = 'middle'; c.fillText(label, tx, ty);
      }
    }
    c.restore();
    curveState.hit = { x: hx, y: hy, t: ht, k: hk, n: nh, xs: xs, ys: ys, box: box };
    counts.curves = drawn;
    drawHover(-1);

    var lg = [];
    ['finished', 'stopped', 'error', 'running', 'other'].forEach(function (k) {
      if (counts[k]) lg.push('<span><span class="sw" style="background:' + COL[k] + '"></span>' + esc(LABEL[k]) + ' ' + counts[k] + '</span>');
    });
    if (D.best >= 0) lg.push('<span><span class="sw" style="background:' + COL.best + ';height:4px"></span>best: ' + esc(T[D.best].name) + '</span>');
    if (counts.stopped) lg.push('<span><span class="mk" style="color:#c2410c">\u00d7</span>where a trial was stopped</span>');
    if ((D.rungs || []).some(function (r) { return fin(r.cut); }))
      lg.push('<span><span class="sw" style="background:' + COL.cutoff + '"></span>rung cutoff (last)</span>');
    if (ms.length) lg.push('<span><span class="sw" style="background:repeating-linear-gradient(90deg,' + COL.rung + ' 0 4px,transparent 4px 8px)"></span>rung milestones</span>');
    if (counts.lineage) lg.push('<span><span class="sw" style="background:repeating-linear-gradient(90deg,' + COL.lineage + ' 0 5px,transparent 5px 8px)"></span>continues from the donor\u2019s checkpoint (PBT exploit)</span>');
    if (counts.earlier) lg.push('<span><span class="sw" style="background:' + COL.axis + ';opacity:.6"></span>before the trial was exploited</span>');
    $('curves-legend').innerHTML = lg.join('');
  }
  function drawHover(ti) {
    var cv = $('curves-hover'), main = $('curves');
    var g = setup(cv, 460), c = g.c;
    cv.style.width = main.clientWidth + 'px';
    var show = ti >= 0 ? ti : selected;
    var h = curveState.hit;
    if (show < 0 || !h) return;
    var t = T[show];
    c.save();
    c.beginPath(); c.rect(h.box.l, h.box.t - 4, h.box.r - h.box.l + 4, h.box.b - h.box.t + 8); c.clip();
    c.beginPath();
    var started = false;
    for (var k = 0; k < t.n; k++) {
      var x = h.xs.map(t.x[k]), y = h.ys.map(t.y[k]);
      if (!fin(x) || !fin(y)) { started = false; continue; }
      if (started) c.lineTo(x, y); else c.moveTo(x, y);
      started = true;
    }
    c.strokeStyle = '#fff'; c.lineWidth = 5; c.stroke();
    c.strokeStyle = COL[klass(t)]; c.lineWidth = 2.5; c.stroke();
    /* Its points, so that a one-result trial shows too. */
    c.beginPath();
    for (var q = 0; q < t.n; q++) {
      var px = h.xs.map(t.x[q]), py = h.ys.map(t.y[q]);
      if (fin(px) && fin(py)) { c.moveTo(px + 3.5, py); c.arc(px, py, 3.5, 0, 2 * Math.PI); }
    }
    c.fillStyle = COL[klass(t)]; c.fill();
    c.strokeStyle = '#fff'; c.lineWidth = 1.2; c.stroke();
    c.restore();
  }
  function curvesEvents() {
    var cv = $('curves');
    cv.addEventListener('mousemove', function (ev) {
      var h = curveState.hit;
      if (!h) return;
      var r = cv.getBoundingClientRect(), i = nearest(h.x, h.y, h.n, ev.clientX - r.left, ev.clientY - r.top, 12);
      if (i < 0) { hideTip(); drawHover(-1); return; }
      var t = T[h.t[i]], xi = h.k[i];
      drawHover(h.t[i]);
      showTip(ev, trialTip(t, esc(E.time_attr) + ' ' + esc(fmt(t.x[xi])) + ': ' + esc(METRIC) + ' <b>' + esc(fmt(t.y[xi])) + '</b>'));
    });
    cv.addEventListener('mouseleave', function () { hideTip(); drawHover(-1); });
    cv.addEventListener('click', function (ev) {
      var h = curveState.hit;
      if (!h) return;
      var r = cv.getBoundingClientRect(), i = nearest(h.x, h.y, h.n, ev.clientX - r.left, ev.clientY - r.top, 12);
      select(i < 0 ? -1 : h.t[i], true);
    });
    function seg(id, key) {
      var el = $(id);
      el.addEventListener('click', function (ev) {
        var b = ev.target.closest('button');
        if (!b) return;
        Array.prototype.forEach.call(el.querySelectorAll('button'), function (x) { x.classList.toggle('on', x === b); });
        curveState[key] = b.getAttribute('data-v');
        drawCurves();
      });
    }
    seg('yscale', 'ymode');
    seg('xscale', 'xmode');
    $('show-stopped').addEventListener('change', function (ev) { curveState.stopped = ev.target.checked; drawCurves(); });
  }

  /* ---- hyperparameters against the final metric --------------------------------- */
  function paramInfo(p) {
    var vals = T.map(function (t) { return t.cfg ? t.cfg[p.name] : undefined; });
    var numeric = vals.every(function (v) { return v === undefined || typeof v === 'number'; });
    var categorical = !numeric || p.kind === 'choice' || p.kind === 'grid_search' || p.kind === 'constant';
    var cats = [];
    if (categorical) {
      var seen = {};
      vals.forEach(function (v) { if (v !== undefined) { var k = JSON.stringify(v); if (!seen[k]) { seen[k] = 1; cats.push(v); } } });
      cats.sort(function (a, b) {
        if (typeof a === 'number' && typeof b === 'number') return a - b;
        return JSON.stringify(a) < JSON.stringify(b) ? -1 : 1;
      });
    }
    var ex = numeric ? extent(vals, p.log) : [0, 0];
    return {
      name: p.name, kind: p.kind, log: !!p.log && ex[0] > 0, cat: categorical, cats: cats,
      catIndex: function (v) { var k = JSON.stringify(v); for (var i = 0; i < cats.length; i++) if (JSON.stringify(cats[i]) === k) return i; return -1; },
      vals: vals, ex: ex
    };
  }
  function metricScale(p0, p1) {
    /* the curves' range (a diverged trial's last value on the edge, not the scale) */
    var yr = ySide('auto');
    if (yr) return scale(yr.s.lo, yr.s.hi, yr.log, p0, p1, 0.05, true);
    var lv = T.map(function (t) { return t.last; });
    var e = extent(lv), ep = extent(lv, true);
    var log = wantLog('auto', e[0], e[1], 10);
    return e[0] === Infinity ? null : scale(log ? ep[0] : e[0], e[1], log, p0, p1, 0.05);
  }
  function drawScatters() {
    var host = $('scatters');
    var infos = P.map(paramInfo);
    var withVal = T.filter(function (t) { return fin(t.last); }).length;
    $('params-title').textContent = 'Hyperparameters against the final ' + METRIC;
    $('params-hint').textContent = 'each point is a trial: its last reported ' + METRIC + ' (' + withVal + ' of ' + T.length + ' trials have one); colour is status';
    if (!infos.length) { host.innerHTML = '<p class="hint">This experiment has no parameters.</p>'; counts.scatters = 0; return; }
    host.innerHTML = infos.map(function (pi, i) {
      return '<div class="scatter"><h3>' + esc(pi.name) + '<small>' + esc(pi.kind || '') + (pi.log ? ' \u00b7 log x' : '') + '</small></h3><canvas id="sc' + i + '"></canvas></div>';
    }).join('');
    var n = 0;
    infos.forEach(function (pi, i) {
      var cv = $('sc' + i), g = setup(cv, 220), c = g.c;
      var box = { l: 52, r: g.w - 10, t: 8, b: g.h - 30 };
      var ys = metricScale(box.b, box.t);
      if (!ys) { c.fillStyle = COL.text; c.fillText('no values yet', box.l, box.t + 20); return; }
      var xs, xticks;
      if (pi.cat) {
        var nc = Math.max(1, pi.cats.length);
        xs = { map: function (v) { var k = pi.catIndex(v); return k < 0 ? NaN : box.l + (k + 0.5) / nc * (box.r - box.l); } };
        xticks = null;
      } else {
        xs = scale(pi.ex[0], pi.ex[1], pi.log, box.l, box.r, 0.04);
        xticks = xs.ticks(5);
      }
      frame(c, xs, ys, box, xticks, ys.ticks(4), null, null);
      if (pi.cat) {
        c.fillStyle = COL.text; c.textAlign = 'center'; c.textBaseline = 'top';
        var lastRight = -Infinity;
        pi.cats.forEach(function (v) {
          var x = xs.map(v), s = fmtVal(v), w = c.measureText(s).width;
          if (x - w / 2 > lastRight + 4) { c.fillText(s, x, box.b + 6); lastRight = x + w / 2; }
        });
      }
      var pts = { x: new Float32Array(T.length), y: new Float32Array(T.length), t: new Int32Array(T.length), n: 0 };
      var r = T.length > 1500 ? 1.8 : T.length > 300 ? 2.4 : 3.2;
      var band = pi.cat ? (box.r - box.l) / Math.max(1, pi.cats.length) * 0.32 : 0;
      ['stopped', 'other', 'running', 'error', 'finished'].forEach(function (cls) {
        c.fillStyle = COL[cls];
        c.globalAlpha = cls === 'stopped' ? 0.55 : 0.8;
        c.beginPath();
        T.forEach(function (t, ti) {
          if (klass(t) !== cls || !fin(t.last)) return;
          var x = xs.map(pi.vals[ti]), y = ys.map(t.last);
          if (!fin(x) || !fin(y)) return;
          if (band) x += (((t.no * 2654435761) % 1000) / 1000 - 0.5) * band;
          c.moveTo(x + r, y); c.arc(x, y, r, 0, 2 * Math.PI);
          pts.x[pts.n] = x; pts.y[pts.n] = y; pts.t[pts.n] = ti; pts.n++;
        });
        c.fill();
      });
      c.globalAlpha = 1;
      if (D.best >= 0) {
        for (var q = 0; q < pts.n; q++) if (pts.t[q] === D.best) {
          c.beginPath(); c.arc(pts.x[q], pts.y[q], r + 3.5, 0, 2 * Math.PI);
          c.strokeStyle = COL.best; c.lineWidth = 2; c.stroke();
        }
      }
      cv.addEventListener('mousemove', function (ev) {
        var rc = cv.getBoundingClientRect(), k = nearest(pts.x, pts.y, pts.n, ev.clientX - rc.left, ev.clientY - rc.top, 8);
        if (k < 0) { hideTip(); return; }
        var t = T[pts.t[k]];
        showTip(ev, trialTip(t, esc(pi.name) + ' ' + esc(fmtVal(pi.vals[pts.t[k]])) + ': ' + esc(METRIC) + ' <b>' + esc(fmt(t.last)) + '</b>'));
      });
      cv.addEventListener('mouseleave', hideTip);
      cv.addEventListener('click', function (ev) {
        var rc = cv.getBoundingClientRect(), k = nearest(pts.x, pts.y, pts.n, ev.clientX - rc.left, ev.clientY - rc.top, 8);
        select(k < 0 ? -1 : pts.t[k], true);
      });
      n++;
    });
    counts.scatters = n;
  }

  /* ---- parallel coordinates of the best trials ----------------------------------- */
  var ranked = [];
  function ramp(f) {
    /* From dark violet (best) to teal: readable on white, in order. */
    var stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98]];
    var x = Math.max(0, Math.min(1, f)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(x)), u = x - i;
    var a = stops[i], b = stops[i + 1];
    return 'rgb(' + Math.round(a[0] + (b[0] - a[0]) * u) + ',' + Math.round(a[1] + (b[1] - a[1]) * u) + ',' + Math.round(a[2] + (b[2] - a[2]) * u) + ')';
  }
  /* Several objectives: the front (k of ranked, first) is not a ranking of trials, so its
   * lines are not told apart by a "best"; each objective gets an axis of its own. */
  var nFront = -1, ptByNo = {};
  function metricAxes(box) {
    if (!MO) {
      var ms = metricScale(box.b, box.t);
      return [{ name: METRIC + ' (' + MODE + ')', map: function (v) { return ms.map(v); }, ticks: ms.ticks(4), v: function (ti) { return T[ti].last; } }];
    }
    return MO.objectives.map(function (o, j) {
      var e = extent((MO.points || []).map(function (p) { return p.v[j]; }));
      var s = e[0] === Infinity ? scale(0, 1, false, box.b, box.t, 0.05) : scale(e[0], e[1], false, box.b, box.t, 0.05);
      return { name: o.metric + ' (' + o.mode + ')', map: function (v) { return s.map(v); }, ticks: s.ticks(4),
        v: function (ti) { var p = ptByNo[T[ti].no]; return p ? p.v[j] : NaN; } };
    });
  }
  function drawParallel() {
    var sel = $('topk'), k = MO ? nFront : parseInt(sel.value, 10) || ranked.length;
    k = Math.min(k, ranked.length);
    var cv = $('parallel'), g = setup(cv, 380), c = g.c;
    var infos = P.map(paramInfo);
    var box = { l: 60, r: g.w - 70, t: 34, b: g.h - 34 };
    if (!ranked.length || (MO && !k)) {
      c.fillStyle = COL.text;
      c.fillText(MO ? 'No trial is on the Pareto front yet.' : 'No trial has a value for ' + METRIC + ' yet.', box.l, box.t + 20);
      counts.parallel = 0; counts.parallelAxes = 0; return;
    }
    var mx = metricAxes(box);
    var axes = infos.length + mx.length;
    counts.parallelAxes = axes;
    var ax = function (i) { return axes === 1 ? (box.l + box.r) / 2 : box.l + i * (box.r - box.l) / (axes - 1); };
    var yOf = infos.map(function (pi) {
      if (pi.cat) {
        var nc = Math.max(1, pi.cats.length);
        return function (v) { var q = pi.catIndex(v); return q < 0 ? NaN : (nc === 1 ? (box.t + box.b) / 2 : box.b - q / (nc - 1) * (box.b - box.t)); };
      }
      var s = scale(pi.ex[0], pi.ex[1], pi.log, box.b, box.t, 0);
      return s.map;
    });
    function poly(ti) {
      var pts = [];
      for (var i = 0; i < infos.length; i++) pts.push([ax(i), yOf[i](infos[i].vals[ti])]);
      mx.forEach(function (m, j) { pts.push([ax(infos.length + j), m.map(m.v(ti))]); });
      c.beginPath();
      var started = false;
      pts.forEach(function (p) {
        if (!fin(p[1])) { started = false; return; }
        if (started) c.lineTo(p[0], p[1]); else c.moveTo(p[0], p[1]);
        started = true;
      });
    }
    /* Everyone else, faint, for context. */
    c.save();
    c.globalAlpha = Math.max(0.02, Math.min(0.15, 20 / ranked.length));
    c.strokeStyle = '#6b7280';
    c.lineWidth = 1;
    for (var j = k; j < ranked.length; j++) { poly(ranked[j]); c.stroke(); }
    c.restore();
    for (var q = k - 1; q >= 0; q--) {
      poly(ranked[q]);
      c.strokeStyle = ramp(k > 1 ? q / (k - 1) : 0);
      c.lineWidth = q === 0 && !MO ? 3 : 1.8;
      c.globalAlpha = 0.9;
      c.stroke();
    }
    c.globalAlpha = 1;
    /* Axes with their names on top and their ranges at the ends. */
    c.fillStyle = COL.text;
    c.textBaseline = 'middle';
    for (var i = 0; i < axes; i++) {
      var x = Math.round(ax(i)) + 0.5;
      c.strokeStyle = COL.axis; c.lineWidth = 1;
      c.beginPath(); c.moveTo(x, box.t); c.lineTo(x, box.b); c.stroke();
      var pi = infos[i], m = pi ? null : mx[i - infos.length], name = pi ? pi.name + (pi.log ? ' (log)' : '') : m.name;
      c.font = '600 ' + FONT; c.textAlign = i === 0 ? 'left' : i === axes - 1 ? 'right' : 'center';
      c.fillText(name, i === 0 ? x - 8 : i === axes - 1 ? x + 8 : x, box.t - 18);
      c.font = FONT; c.textAlign = 'left';
      var labels = [];
      if (pi && pi.cat) pi.cats.forEach(function (v) { labels.push([yOf[i](v), fmtVal(v)]); });
      else if (pi) labels.push([box.b, fmt(pi.ex[0])], [box.t, fmt(pi.ex[1])]);
      else m.ticks.forEach(function (v) { labels.push([m.map(v), fmtTick(v)]); });
      labels.forEach(function (l) {
        if (!fin(l[0]) || l[0] < box.t - 1 || l[0] > box.b + 1) return;
        var w = c.measureText(l[1]).width;
        c.fillStyle = 'rgba(255,255,255,.85)'; c.fillRect(x + 4, l[0] - 7, w + 4, 14);
        c.fillStyle = COL.text; c.fillText(l[1], x + 6, l[0]);
        c.beginPath(); c.moveTo(x - 3, Math.round(l[0]) + 0.5); c.lineTo(x + 3, Math.round(l[0]) + 0.5); c.stroke();
      });
    }
    counts.parallel = k;
    var sw = '<span><span class="sw" style="width:90px;height:6px;background:linear-gradient(90deg,' +
      ramp(0) + ',' + ramp(0.33) + ',' + ramp(0.66) + ',' + ramp(1) + ')"></span>';
    $('parallel-legend').innerHTML = (MO
      ? sw + 'the ' + k + ' trial' + (k === 1 ? '' : 's') + ' on the Pareto front, in the order tune best prints them (by ' +
        esc(mx[0].name) + ', then trial)</span>'
      : sw + 'the best ' + k + ' of ' + ranked.length + ' trials by their last ' + esc(METRIC) + ' (' + esc(MODE) +
        '), best first; the best is the thick line</span>') +
      (ranked.length > k ? '<span><span class="sw" style="background:#d1d5db"></span>the other ' + (ranked.length - k) + '</span>' : '');
  }
  function parallelInit() {
    if (MO) {
      /* the front as report.c wrote it (cli/front.c's points, tune best's order), then
       * every other trial with a point, faint: nothing is ranked here */
      (MO.points || []).forEach(function (p) { ptByNo[p.no] = p; });
      ranked = (MO.order || []).filter(function (no) { return byNo[no]; }).map(function (no) { return byNo[no].i; });
      nFront = ranked.length;
      var on = {};
      ranked.forEach(function (i) { on[i] = 1; });
      (MO.points || []).forEach(function (p) { var t = byNo[p.no]; if (t && !on[t.i]) ranked.push(t.i); });
      $('parallel-title').textContent = 'The Pareto front, parallel coordinates';
      $('topk').parentNode.style.display = 'none'; /* no "best k" to choose */
      return;
    }
    ranked = T.map(function (t, i) { return i; }).filter(function (i) { return fin(T[i].last); });
    ranked.sort(function (a, b) { return better(T[a].last, T[b].last) ? -1 : better(T[b].last, T[a].last) ? 1 : T[a].no - T[b].no; });
    var opts = [5, 10, 20, 50, 100].filter(function (v) { return v < ranked.length; });
    opts.push(ranked.length);
    var def = ranked.length <= 10 ? ranked.length : ranked.length <= 200 ? 10 : 20;
    $('topk').innerHTML = opts.map(function (v) {
      return '<option value="' + v + '"' + (v === def ? ' selected' : '') + '>' + (v === ranked.length ? 'all ' + v : v) + '</option>';
    }).join('');
    $('topk').addEventListener('change', drawParallel);
  }

  /* ---- the table ---------------------------------------------------------------- */
  /* Pages of 200 rows: 5,000 rows of DOM cost seconds of layout, 200 cost nothing. */
  var cols = [], sortCol = 4, sortDir = 1, filterText = '', rowText = [], page = 0, PAGE = 200, lastOrder = [];
  function tableInit() {
    cols = [
      { k: 'no', h: '#', num: 1, v: function (t) { return t.no; } },
      { k: 'name', h: 'trial', v: function (t) { return t.name; } },
      { k: 'st', h: 'status', v: function (t) { return LABEL[klass(t)]; } },
      { k: 'n', h: 'results', num: 1, v: function (t) { return t.n; } },
      { k: 'last', h: 'last ' + METRIC, num: 1, metric: 1, v: function (t) { return t.last; } },
      { k: 'best', h: 'best ' + METRIC, num: 1, metric: 1, v: function (t) { return t.best; } }
    ];
    P.forEach(function (p) {
      cols.push({ k: 'p:' + p.name, h: p.name, num: 1, v: function (t) { return t.cfg ? t.cfg[p.name] : undefined; } });
    });
    /* the other values each trial reported last (report.c chose them, bounded; the rest
     * are named under the table) */
    var X = D.extra || { keys: [], left: [] };
    X.keys.forEach(function (k) {
      cols.push({ k: 'r:' + k, h: k, num: 1, v: function (t) { return t.r ? t.r[k] : undefined; } });
    });
    cols.push({ k: 'dur', h: 'time', num: 1, v: function (t) { return fin(t.t0) ? (fin(t.t1) ? t.t1 : D.generated) - t.t0 : NaN; }, f: fmtDur });
    cols.push({ k: 'slice', h: 'slice', v: function (t) { return t.slice || ''; } });
    cols.push({ k: 'err', h: 'error', v: function (t) { return t.err || ''; } });
    /* why the searcher chose each configuration (trials.suggested_by); random search's
     * reports, which have none, keep their columns */
    if (T.some(function (t) { return t.by; }))
      cols.push({ k: 'by', h: 'chosen by', v: function (t) { return t.by || ''; } });
    sortDir = MODE_MAX ? -1 : 1;
    rowText = T.map(function (t) {
      return (t.name + ' ' + t.st + ' ' + LABEL[klass(t)] + ' ' + cfgText(t) + ' ' + fmt(t.last) + ' ' + (t.err || '')).toLowerCase();
    });
    $('trials').querySelector('thead').addEventListener('click', function (ev) {
      var th = ev.target.closest('th');
      if (!th) return;
      var i = +th.getAttribute('data-i');
      if (i === sortCol) sortDir = -sortDir;
      else { sortCol = i; sortDir = cols[i].metric && MODE_MAX ? -1 : 1; }
      page = 0;
      drawTable();
    });
    $('trials').querySelector('tbody').addEventListener('click', function (ev) {
      var tr = ev.target.closest('tr');
      if (tr) select(+tr.getAttribute('data-t'), false);
    });
    $('filter').addEventListener('input', function (ev) { filterText = ev.target.value.toLowerCase(); page = 0; drawTable(); });
    $('pager').addEventListener('click', function (ev) {
      var b = ev.target.closest('button');
      if (!b || b.disabled) return;
      page += +b.getAttribute('data-d');
      drawTable();
    });
  }
  function cmp(a, b) {
    var ua = a === undefined || a === null || (typeof a === 'number' && !isFinite(a));
    var ub = b === undefined || b === null || (typeof b === 'number' && !isFinite(b));
    if (ua || ub) return ua === ub ? 0 : ua ? 1 : -1; /* missing values always last */
    if (typeof a === 'number' && typeof b === 'number') return (a - b) * sortDir;
    var sa = typeof a === 'string' ? a : JSON.stringify(a), sb = typeof b === 'string' ? b : JSON.stringify(b);
    return (sa < sb ? -1 : sa > sb ? 1 : 0) * sortDir;
  }
  function drawTable() {
    var col = cols[sortCol];
    $('trials').querySelector('thead').innerHTML = '<tr>' + cols.map(function (c, i) {
      return '<th data-i="' + i + '"' + (c.num ? ' class="num"' : '') + '>' + esc(c.h) +
        (i === sortCol ? '<span class="arrow">' + (sortDir > 0 ? '\u25b2' : '\u25bc') + '</span>' : '') + '</th>';
    }).join('') + '</tr>';
    var idx = [];
    for (var i = 0; i < T.length; i++) if (!filterText || rowText[i].indexOf(filterText) >= 0) idx.push(i);
    var keys = idx.map(function (i) { return col.v(T[i]); });
    var order = idx.map(function (_, j) { return j; });
    order.sort(function (a, b) { return cmp(keys[a], keys[b]) || T[idx[a]].no - T[idx[b]].no; });
    lastOrder = order.map(function (j) { return idx[j]; });
    var html = [], pages = Math.max(1, Math.ceil(order.length / PAGE));
    if (page >= pages) page = pages - 1;
    if (page < 0) page = 0;
    order.slice(page * PAGE, (page + 1) * PAGE).forEach(function (j) {
      var ti = idx[j], t = T[ti], cls = klass(t);
      var tr = '<tr data-t="' + ti + '"' + (ti === D.best ? ' class="best' + (ti === selected ? ' sel' : '') + '"' : ti === selected ? ' class="sel"' : '') + '>';
      cols.forEach(function (c) {
        var v = c.v(t), s;
        if (c.k === 'st') s = '<span class="chip ' + cls + '">' + esc(LABEL[cls]) + '</span>';
        else if (c.k === 'name') s = esc(t.name) + (ti === D.best ? '<span class="star" title="best trial">\u2605</span>' : '');
        else s = esc(c.f ? c.f(v) : fmtVal(v === undefined ? '\u2013' : v));
        tr += '<td' + (c.k === 'err' ? ' class="err" title="' + esc(v) + '"' : c.num ? ' class="num"' : '') + '>' + s + '</td>';
      });
      html.push(tr + '</tr>');
    });
    $('trials').querySelector('tbody').innerHTML = html.join('');
    counts.rows = order.length;
    var first = order.length ? page * PAGE + 1 : 0, last = Math.min(order.length, (page + 1) * PAGE);
    $('pager').innerHTML = pages > 1 ? '<button data-d="-1"' + (page === 0 ? ' disabled' : '') + '>\u25c0</button>' +
      '<span>rows ' + first + '\u2013' + last + ' of ' + order.length + '</span>' +
      '<button data-d="1"' + (page === pages - 1 ? ' disabled' : '') + '>\u25b6</button>' : '';
    var X = D.extra || { keys: [], left: [] };
    $('table-hint').textContent = (filterText ? order.length + ' of ' + T.length + ' trials match. ' : '') +
      'Click a column to sort, a row to highlight its curve.' +
      (X.keys.length ? ' ' + X.keys.join(', ') + ': each trial\u2019s last reported value.' : '') +
      (X.left.length ? ' Not shown (at most ' + X.max + ' such columns, those the most trials report): ' +
        X.left.join(', ') + '; tune show TRIAL prints a trial\u2019s last result.' : '');
    body.setAttribute('data-extra-columns', String(X.keys.length));
    /* data-rows: the table's rows (every trial that matches); data-rows-shown: this page's. */
    body.setAttribute('data-rows', String(order.length));
    body.setAttribute('data-rows-shown', String(html.length));
  }
  function select(ti, scroll) {
    selected = ti === selected ? -1 : ti;
    drawHover(-1);
    var pos = lastOrder.indexOf(selected);
    if (scroll && pos >= 0 && Math.floor(pos / PAGE) !== page) {
      page = Math.floor(pos / PAGE); /* bring the trial's row into view */
      drawTable();
    }
    var rows = $('trials').querySelectorAll('tbody tr');
    for (var i = 0; i < rows.length; i++) {
      var on = +rows[i].getAttribute('data-t') === selected;
      rows[i].classList.toggle('sel', on);
      if (on && scroll) rows[i].scrollIntoView({ block: 'nearest' });
    }
  }

  /* ---- settings ----------------------------------------------------------------- */
  function settings() {
    var s = E.settings || {}, sc = s.scheduler || {}, res = s.resources || {}, ex = s.executor || {};
    var rows = [
      ['experiment', E.name], ['status', E.status], ['metric', METRIC + ' (' + MODE + ')' + (METRIC !== E.metric ? ', the experiment\u2019s is ' + E.metric + ' (' + E.mode + ')' : '')],
      ['scheduler', [sc.type || E.scheduler].concat(sc.type === 'asha' ? ['time_attr ' + sc.time_attr, 'max_t ' + sc.max_t, 'grace_period ' + sc.grace_period, 'reduction_factor ' + sc.reduction_factor, 'brackets ' + sc.brackets] :
        sc.type === 'median' ? ['time_attr ' + sc.time_attr, 'grace_period ' + sc.grace_period, 'min_samples_required ' + sc.min_samples_required] : []).join(', ')],
      ['trials', (s.num_trials !== undefined ? s.num_trials : E.num_trials) + ' (num_samples ' + s.num_samples + ')'],
      ['max_concurrent', s.max_concurrent === 0 ? 'no limit' : s.max_concurrent],
      ['resources', 'gpus_per_trial ' + res.gpus_per_trial + ', cpus_per_trial ' + res.cpus_per_trial],
      ['seed', s.seed],
      ['command', (s.command || []).join(' ')],
      ['executor', ex.type],
      ['limits', 'stop_grace_s ' + s.stop_grace_s + ', time_budget_s ' + s.time_budget_s + ', result_timeout_s ' + s.result_timeout_s + ', max_failures ' + s.max_failures],
      ['parameters', P.map(function (p) { return p.name + ' (' + p.kind + ')'; }).join(', ')],
      ['created', fmtDate(E.created)], ['ended', fmtDate(E.ended)], ['results in', E.results_dir]
    ];
    $('settings').innerHTML = rows.map(function (r) {
      return '<dt>' + esc(r[0]) + '</dt><dd>' + esc(r[1] === undefined || r[1] === null ? '\u2013' : r[1]) + '</dd>';
    }).join('');
    $('space-text').textContent = E.space_text || '';
    $('settings-json').textContent = JSON.stringify(E.settings || {}, null, 2);
    $('foot').textContent = 'Generated by tune ' + D.version + ' on ' + fmtDate(D.generated) + ' from ' + (D.db || 'the database') +
      '. Everything on this page is in this one file.';
  }

  /* ---- Population Based Training -------------------------------------------------- */
  /* Trial `no`'s points from attempt `a` on, each as [x, y, attempt]: a pause and resume
   * or a later exploit moves an attempt's results on to the next attempt, so an
   * exploit's points may sit in any later one. */
  function pointsFrom(no, a) {
    var t = byNo[no], out = [];
    if (t && t.att >= a) for (var k = 0; k < t.n; k++) out.push([t.x[k], t.y[k], t.att]);
    EARLIER.forEach(function (s) {
      if (s.t === no && s.a >= a) s.p.forEach(function (q) { out.push([q[0], q[1], s.a]); });
    });
    return out;
  }
  /* The point with x = at (or the first after it, when after) from the lowest attempt that
   * holds one: the attempt the exploit concerns, or where its results moved. */
  function pick(pts, at, after) {
    var best = null;
    pts.forEach(function (q) {
      if (!fin(q[1]) || (after ? !(q[0] > at) : q[0] !== at)) return;
      if (!best || q[0] < best[0] || (q[0] === best[0] && q[2] < best[2])) best = q;
    });
    return best;
  }
  /* Where the donor was when the trial took its checkpoint: its point at x = dx in the
   * attempt that wrote it (or a later one it moved to), else in any attempt, else the value
   * the scheduler compared (on the experiment's own metric only). */
  function donorPoint(L) {
    var q = pick(pointsFrom(L.d, fin(L.da) ? L.da : 0), L.dx, false) || pick(pointsFrom(L.d, 0), L.dx, false);
    return q || (D.own_metric && fin(L.dv) ? [L.dx, L.dv] : null);
  }
  /* The trial's first point after the checkpoint, from the attempt the exploit started. */
  function clonePoint(L) {
    return pick(pointsFrom(L.t, L.a), L.dx, true);
  }
  /* The superseded attempts, faded, and a dashed line from each donor's point to where the
   * trial that took its checkpoint went on: the curve continues from the donor. */
  function lineageOnCurves(c, xs, ys, early, shown) {
    var ne = 0, nl = 0;
    c.save();
    c.globalAlpha = 0.45;
    c.strokeStyle = COL.axis;
    c.lineWidth = 1.1;
    early.forEach(function (s) {
      c.beginPath();
      var started = false, any = false;
      s.p.forEach(function (q) {
        var x = xs.map(q[0]), y = ys.map(q[1]);
        if (!fin(x) || !fin(y)) { started = false; return; }
        if (started) c.lineTo(x, y); else c.moveTo(x, y);
        started = true; any = true;
      });
      c.stroke();
      if (any) ne++;
    });
    c.globalAlpha = 0.9;
    c.strokeStyle = COL.lineage;
    c.fillStyle = COL.lineage;
    c.lineWidth = 1.4;
    c.setLineDash([5, 3]);
    LIN.forEach(function (L) {
      if (!shown[L.t] || !shown[L.d]) return;
      var a = donorPoint(L), b = clonePoint(L);
      if (!a || !b) return;
      var x0 = xs.map(a[0]), y0 = ys.map(a[1]), x1 = xs.map(b[0]), y1 = ys.map(b[1]);
      if (!fin(x0) || !fin(y0) || !fin(x1) || !fin(y1)) return;
      c.beginPath(); c.moveTo(x0, y0); c.lineTo(x1, y1); c.stroke();
      c.save(); c.setLineDash([]); c.beginPath(); c.arc(x0, y0, 3.2, 0, 2 * Math.PI); c.stroke(); c.restore();
      nl++;
    });
    c.restore();
    counts.lineage = nl;
    counts.earlier = ne;
  }

  /* A trial's configuration before its first exploit (the lineage's old_config), else the
   * one it has. */
  function firstConfig(no) {
    for (var i = 0; i < LIN.length; i++) if (LIN[i].t === no && LIN[i].old) return LIN[i].old;
    return byNo[no] ? byNo[no].cfg : null;
  }
  /* Where the donor's checkpoint that exploit r took came from: the exploit whose copy it
   * is (a donor exploited but not yet trained on hands on its copy), else the donor's last
   * exploit before it trained to that point (from an attempt no later than the one that
   * wrote the checkpoint), else none (the donor's own first configuration). */
  function originOf(r) {
    var L = LIN[r], best = -1;
    for (var i = r - 1; i >= 0; i--) {
      var M = LIN[i];
      if (M.t !== L.d) continue;
      if (L.dck && M.rf === L.dck) return i;
      if (best < 0 && M.dx < L.dx && (!fin(L.da) || M.a <= L.da)) best = i;
    }
    return best;
  }
  /* The hyperparameters the best trial's weights were trained with, oldest first: from the
   * trial's last exploit back through the donors whose checkpoints its weights passed
   * through (Ray Tune's PBT replay follows the same chain). [{no, from, to, cfg}], x in
   * (from, to]; stretches where a clone handed on a copy without training drop out. */
  function schedule(bi) {
    var segs = [], cur = T[bi].no, upto = Infinity, r = -1;
    for (var i = LIN.length - 1; i >= 0; i--) if (LIN[i].t === cur) { r = i; break; }
    for (var guard = 0; r >= 0 && guard <= LIN.length; guard++) {
      var L = LIN[r];
      segs.unshift({ no: L.t, from: L.dx, to: upto, cfg: L.new });
      cur = L.d; upto = L.dx;
      r = originOf(r);
    }
    segs.unshift({ no: cur, from: -Infinity, to: upto, cfg: firstConfig(cur) });
    var bt = T[bi], last = -Infinity;
    for (var k = 0; k < bt.n; k++) if (fin(bt.x[k]) && bt.x[k] > last) last = bt.x[k];
    segs[segs.length - 1].to = last;
    return segs.filter(function (s) { return !(s.to <= s.from); });
  }
  function drawPbt() {
    counts.schedule = 0; counts.scheduleCharts = 0; counts.exploits = 0;
    if (!LIN.length) return;
    $('sec-pbt').hidden = false;
    var bi = D.best;
    var nameOf = function (no) { return byNo[no] ? byNo[no].name : 'trial ' + no; };
    $('pbt-hint').textContent = LIN.length + ' exploit' + (LIN.length > 1 ? 's' : '') + ' in ' +
      T.length + ' trials; on the learning curves a dashed line joins each donor\u2019s checkpoint to the trial that went on from it';
    var xname = E.time_attr || 'training_iteration';
    var pnames = P.map(function (p) { return p.name; });
    if (bi >= 0) {
      var segs = schedule(bi);
      counts.schedule = segs.length;
      $('schedule-title').textContent = 'Hyperparameter schedule of the best trial, ' + T[bi].name +
        ' (its weights were trained in ' + segs.map(function (s) { return nameOf(s.no); }).join(' \u2192 ') + ')';
      var xt = function (v) { return fin(v) ? fmt(v) : 'start'; };
      $('schedule').querySelector('thead').innerHTML = '<tr><th>' + esc(xname) + '</th><th>trained in</th>' +
        pnames.map(function (n) { return '<th>' + esc(n) + '</th>'; }).join('') + '</tr>';
      $('schedule').querySelector('tbody').innerHTML = segs.map(function (s) {
        return '<tr data-seg="' + s.no + '"><td>' + esc(xt(s.from)) + ' \u2192 ' + esc(fmt(s.to)) + '</td><td>' + esc(nameOf(s.no)) + '</td>' +
          pnames.map(function (n) { return '<td class="num">' + esc(fmtVal(s.cfg ? s.cfg[n] : undefined)) + '</td>'; }).join('') + '</tr>';
      }).join('');
      scheduleCharts(segs);
    }
    $('exploits').querySelector('thead').innerHTML = '<tr><th>' + esc(xname) + '</th><th>trial</th><th>took the checkpoint of</th><th>at</th><th>' +
      esc(E.metric || 'value') + '</th><th>donor\u2019s</th><th>changed</th></tr>';
    $('exploits').querySelector('tbody').innerHTML = LIN.map(function (L) {
      var ch = [];
      pnames.forEach(function (n) {
        var a = L.old ? L.old[n] : undefined, b = L.new ? L.new[n] : undefined;
        if (JSON.stringify(a) !== JSON.stringify(b)) ch.push(n + ' ' + fmtVal(a) + ' \u2192 ' + fmtVal(b));
      });
      return '<tr><td class="num">' + esc(fmt(L.x)) + '</td><td>' + esc(nameOf(L.t)) + ' (attempt ' + esc(fmt(L.a)) + ')</td><td>' +
        esc(nameOf(L.d)) + '</td><td class="num">' + esc(fmt(L.dx)) + '</td><td class="num">' + esc(fmt(L.v)) + '</td><td class="num">' +
        esc(fmt(L.dv)) + '</td><td>' + esc(ch.join(', ')) + '</td></tr>';
    }).join('');
    counts.exploits = LIN.length;
  }
  /* One step chart per numeric parameter: its value over the best trial's training. */
  function scheduleCharts(segs) {
    var host = $('schedule-charts');
    /* from the start of training (x 0) unless a stretch begins before it */
    var x0 = 0, x1 = -Infinity;
    segs.forEach(function (s) {
      if (fin(s.from) && s.from < x0) x0 = s.from;
      if (fin(s.to) && s.to > x1) x1 = s.to;
    });
    if (!fin(x1) || !(x1 > x0)) x1 = x0 + 1;
    var ps = P.filter(function (p) { return segs.some(function (s) { return s.cfg && fin(s.cfg[p.name]); }); });
    host.innerHTML = ps.map(function (p, i) {
      return '<div class="scatter"><h3>' + esc(p.name) + '<small>' + (p.log ? 'log y' : '') + '</small></h3><canvas id="sch' + i + '"></canvas></div>';
    }).join('');
    ps.forEach(function (p, i) {
      var cv = $('sch' + i), g = setup(cv, 150), c = g.c;
      var box = { l: 52, r: g.w - 10, t: 8, b: g.h - 30 };
      var vals = segs.map(function (s) { return s.cfg ? s.cfg[p.name] : NaN; });
      var ev = extent(vals, p.log), log = p.log && ev[0] > 0;
      var xs = scale(x0, x1, false, box.l, box.r, 0.02), ys = scale(ev[0], ev[1], log, box.b, box.t, 0.12);
      frame(c, xs, ys, box, xs.ticks(5), ys.ticks(3), E.time_attr, null);
      c.strokeStyle = COL.lineage; c.lineWidth = 2; c.beginPath();
      var started = false;
      segs.forEach(function (s, k) {
        var y = ys.map(vals[k]), xa = xs.map(fin(s.from) ? s.from : x0), xb = xs.map(s.to);
        if (!fin(y)) { started = false; return; }
        if (started) c.lineTo(xa, y); else c.moveTo(xa, y);
        c.lineTo(xb, y);
        started = true;
      });
      c.stroke();
      counts.scheduleCharts++;
    });
  }

  /* ---- several objectives: the Pareto front and the hypervolume over time ---------- */
  /* D.mo (report.c) holds each trial's point, its last result ranked by tune's one rule
   * (pareto_rank): front 1 on the Pareto front, lv its level (-1 infeasible or missing an
   * objective), viol its total constraint violation. Nothing is ranked here. */
  var MO = D.mo;
  function frontPairs() {
    var k = MO.objectives.length, out = [];
    for (var i = 0; i < k; i++) for (var j = i + 1; j < k; j++) out.push([i, j]);
    return out;
  }
  function objLabel(j) { var o = MO.objectives[j]; return o.metric + ' (' + o.mode + ')'; }
  function pointTip(p) {
    var t = byNo[p.no], vals = MO.objectives.map(function (o, j) { return esc(o.metric) + ' <b>' + esc(fmt(p.v[j])) + '</b>'; }).join(', ');
    var what = p.front ? 'on the Pareto front' : p.viol !== 0 ? 'infeasible: ' + esc(p.why || 'a constraint is violated') : p.lv >= 0 ? 'front ' + p.lv : 'an objective has no value';
    return t ? trialTip(t, vals + '<br>' + what) : vals;
  }
  function drawFront() {
    if (!MO) return;
    $('sec-front').hidden = false;
    var P2 = frontPairs(), pts = MO.points || [];
    var ninf = pts.filter(function (p) { return p.viol !== 0; }).length;
    $('front-hint').textContent = MO.nfront + ' trial' + (MO.nfront === 1 ? '' : 's') + ' on the Pareto front, of ' + MO.n +
      ' with a result (' + MO.feasible + ' feasible); each point is a trial\u2019s last result' +
      (P2.length > 1 ? '; one chart per pair of objectives' : '');
    var host = $('front-charts');
    host.innerHTML = P2.map(function (pr, i) {
      return '<div class="scatter"><h3>' + esc(MO.objectives[pr[1]].metric) + ' against ' + esc(MO.objectives[pr[0]].metric) + '</h3><canvas id="fr' + i + '"></canvas></div>';
    }).join('');
    var drawn = 0, infDrawn = 0;
    P2.forEach(function (pr, i) {
      var a = pr[0], b = pr[1];
      var cv = $('fr' + i), g = setup(cv, 260), c = g.c;
      var box = { l: 56, r: g.w - 10, t: 8, b: g.h - 34 };
      var ok = pts.filter(function (p) { return fin(p.v[a]) && fin(p.v[b]); });
      if (!ok.length) { c.fillStyle = COL.text; c.fillText('no values yet', box.l, box.t + 20); return; }
      var ex = extent(ok.map(function (p) { return p.v[a]; })), ey = extent(ok.map(function (p) { return p.v[b]; }));
      var xs = scale(ex[0], ex[1], false, box.l, box.r, 0.05), ys = scale(ey[0], ey[1], false, box.b, box.t, 0.05);
      frame(c, xs, ys, box, xs.ticks(5), ys.ticks(4), objLabel(a), objLabel(b));
      var hit = { x: new Float32Array(ok.length), y: new Float32Array(ok.length), p: [], n: 0 };
      function mark(p, x, y) { hit.x[hit.n] = x; hit.y[hit.n] = y; hit.p.push(p); hit.n++; }
      /* dominated feasible points, then infeasible ones as crosses, then the front on top */
      c.fillStyle = COL.finished; c.globalAlpha = 0.45; c.beginPath();
      ok.forEach(function (p) {
        if (p.front || p.viol !== 0) return;
        var x = xs.map(p.v[a]), y = ys.map(p.v[b]);
        c.moveTo(x + 3, y); c.arc(x, y, 3, 0, 2 * Math.PI); mark(p, x, y);
      });
      c.fill(); c.globalAlpha = 1;
      c.strokeStyle = COL.error; c.lineWidth = 1.5; c.beginPath();
      ok.forEach(function (p) {
        if (p.viol === 0) return;
        var x = xs.map(p.v[a]), y = ys.map(p.v[b]);
        cross(c, x, y, 3.5); mark(p, x, y); infDrawn++;
      });
      c.stroke();
      var fr = ok.filter(function (p) { return p.front; });
      if (MO.objectives.length === 2 && fr.length) {
        /* two objectives: the front as the staircase it dominates (both minimised as shown) */
        var sgn = MO.objectives.map(function (o) { return o.mode === 'max' ? -1 : 1; });
        fr.sort(function (p, q) { return sgn[a] * (p.v[a] - q.v[a]); });
        c.strokeStyle = COL.best; c.lineWidth = 1; c.beginPath();
        fr.forEach(function (p, k) {
          var x = xs.map(p.v[a]), y = ys.map(p.v[b]);
          if (k) c.lineTo(x, ys.map(fr[k - 1].v[b])), c.lineTo(x, y); else c.moveTo(x, y);
        });
        c.stroke();
      }
      c.fillStyle = COL.best; c.beginPath();
      fr.forEach(function (p) {
        var x = xs.map(p.v[a]), y = ys.map(p.v[b]);
        c.moveTo(x + 4.5, y); c.arc(x, y, 4.5, 0, 2 * Math.PI); mark(p, x, y);
      });
      c.fill();
      cv.addEventListener('mousemove', function (ev) {
        var rc = cv.getBoundingClientRect(), q = nearest(hit.x, hit.y, hit.n, ev.clientX - rc.left, ev.clientY - rc.top, 8);
        if (q < 0) { hideTip(); return; }
        showTip(ev, pointTip(hit.p[q]));
      });
      cv.addEventListener('mouseleave', hideTip);
      cv.addEventListener('click', function (ev) {
        var rc = cv.getBoundingClientRect(), q = nearest(hit.x, hit.y, hit.n, ev.clientX - rc.left, ev.clientY - rc.top, 8);
        var t = q < 0 ? null : byNo[hit.p[q].no];
        select(t ? t.i : -1, true);
      });
      drawn++;
    });
    $('front-legend').innerHTML = '<span><span class="mk" style="color:' + COL.best + '">\u25cf</span>Pareto front ' + MO.nfront + '</span>' +
      '<span><span class="mk" style="color:' + COL.finished + '">\u25cf</span>dominated</span>' +
      (ninf ? '<span><span class="mk" style="color:' + COL.error + '">\u00d7</span>infeasible ' + ninf + '</span>' : '');
    counts.frontCharts = drawn;
    counts.frontDrawn = pts.filter(function (p) { return p.front; }).length;
    counts.infeasibleDrawn = infDrawn;
    drawHv();
  }
  function drawHv() {
    var H = MO.hv, cv = $('hv'), g = setup(cv, 220), c = g.c;
    var box = { l: 64, r: g.w - 12, t: 10, b: g.h - 34 };
    if (!H || !H.t.length) {
      c.fillStyle = COL.text; c.fillText('no feasible result yet: no hypervolume', box.l, box.t + 20);
      $('hv-note').textContent = '';
      counts.hvPoints = 0;
      return;
    }
    var et = extent(H.t), ev = extent(H.v);
    var xs = scale(Math.min(0, et[0]), et[1], false, box.l, box.r, 0.02), ys = scale(Math.min(0, ev[0]), ev[1], false, box.b, box.t, 0.05);
    frame(c, xs, ys, box, xs.ticks(6), ys.ticks(4), 'seconds since the first result', 'hypervolume');
    c.strokeStyle = COL.best; c.lineWidth = 1.6; c.beginPath();
    H.t.forEach(function (t, i) {
      var x = xs.map(t), y = ys.map(H.v[i]);
      if (i) c.lineTo(x, ys.map(H.v[i - 1])), c.lineTo(x, y); else c.moveTo(x, y);
    });
    c.stroke();
    $('hv-note').textContent = 'Hypervolume of the feasible trials\u2019 latest points at each time, against the reference point (' +
      MO.objectives.map(function (o, j) { return o.metric + ' ' + fmt(H.ref[j]); }).join(', ') + '): ' + H.rule + '. Final ' + fmt(H.v[H.v.length - 1]) + '.';
    counts.hvPoints = H.t.length;
  }

  /* ---- run ---------------------------------------------------------------------- */
  function guard(name, fn) {
    /* One broken chart leaves the others drawn; the error is counted (report.html). */
    try { fn(); } catch (e) {
      window.__tuneError(name + ': ' + (e && e.message ? e.message : String(e)));
    }
  }
  guard('header', header);
  guard('curves', function () { curvesEvents(); drawCurves(); });
  guard('pbt', drawPbt);
  guard('front', drawFront);
  guard('scatters', drawScatters);
  guard('parallel', function () { parallelInit(); drawParallel(); });
  guard('table', function () { tableInit(); drawTable(); });
  guard('settings', settings);
  var resizeTimer = 0, lastW = window.innerWidth;
  window.addEventListener('resize', function () {
    if (window.innerWidth === lastW) return;
    lastW = window.innerWidth;
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () { guard('resize', function () { drawCurves(); drawScatters(); drawParallel(); if (MO) drawFront(); }); }, 120);
  });
  body.setAttribute('data-curves', String(counts.curves || 0));
  body.setAttribute('data-trials-with-results', String(T.filter(function (t) {
    for (var k = 0; k < t.n; k++) if (fin(t.x[k]) && fin(t.y[k])) return true;
    return false;
  }).length));
  body.setAttribute('data-scatters', String(counts.scatters || 0));
  body.setAttribute('data-clipped', String(counts.clipped || 0));
  body.setAttribute('data-lineage', String(counts.lineage || 0));
  body.setAttribute('data-earlier', String(counts.earlier || 0));
  body.setAttribute('data-schedule', String(counts.schedule || 0));
  body.setAttribute('data-schedule-charts', String(counts.scheduleCharts || 0));
  body.setAttribute('data-exploits', String(counts.exploits || 0));
  body.setAttribute('data-parallel', String(counts.parallel || 0));
  body.setAttribute('data-parallel-axes', String(counts.parallelAxes || 0));
  if (MO) {
    body.setAttribute('data-front', String(MO.nfront));
    body.setAttribute('data-front-charts', String(counts.frontCharts || 0));
    body.setAttribute('data-front-drawn', String(counts.frontDrawn || 0));
    body.setAttribute('data-infeasible-drawn', String(counts.infeasibleDrawn || 0));
    body.setAttribute('data-hv-points', String(counts.hvPoints || 0));
  }
  body.setAttribute('data-errors', String(window.__tuneErrors || 0));
  body.setAttribute('data-render-ms', String(Math.round(performance.now() - t0)));
  body.setAttribute('data-ready', '1');
})();
