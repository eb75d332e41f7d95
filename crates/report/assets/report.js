// The HTML report's script (inlined by html.rs): turns each chart of #wirespeed-charts into a
// Chart.js configuration and records on <body> how many were drawn and inked, and any errors.
(function () {
  "use strict";
  var errors = [];
  function fail(msg) {
    errors.push(String(msg));
    var li = document.createElement("li");
    li.textContent = String(msg);
    document.getElementById("errors").appendChild(li);
    document.body.dataset.errors = String(errors.length);
  }
  window.addEventListener("error", function (e) { fail(e.message); });
  var palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  function axis(label, log) {
    return { type: log ? "logarithmic" : "linear", title: { display: true, text: label } };
  }
  // Confidence intervals drawn as whiskers over bars.
  var whiskers = {
    id: "whiskers",
    afterDatasetsDraw: function (chart) {
      var ctx = chart.ctx;
      chart.data.datasets.forEach(function (ds, i) {
        if (!ds.whiskers) return;
        chart.getDatasetMeta(i).data.forEach(function (bar, k) {
          var w = ds.whiskers[k];
          if (!w || !(w[1] > w[0])) return;
          var y = chart.scales.y, lo = y.getPixelForValue(w[0]), hi = y.getPixelForValue(w[1]);
          ctx.save(); ctx.strokeStyle = "#222"; ctx.lineWidth = 2; ctx.beginPath();
          ctx.moveTo(bar.x, lo); ctx.lineTo(bar.x, hi);
          ctx.moveTo(bar.x - 6, lo); ctx.lineTo(bar.x + 6, lo);
          ctx.moveTo(bar.x - 6, hi); ctx.lineTo(bar.x + 6, hi);
          ctx.stroke(); ctx.restore();
        });
      });
    }
  };
  function config(c) {
    var common = {
      animation: false, responsive: true, maintainAspectRatio: false,
      plugins: { title: { display: true, text: c.title, font: { size: 15 } }, legend: { display: c.series.length > 1 || c.kind === "line" } }
    };
    if (c.kind === "bar") {
      var s = c.series[0];
      return {
        type: "bar",
        data: { labels: c.categories, datasets: [{ label: s.label, data: s.points.map(function (p) { return p[1]; }),
          backgroundColor: s.points.map(function (p, k) { return palette[k % palette.length]; }), whiskers: s.whiskers }] },
        options: Object.assign(common, { scales: { x: { title: { display: true, text: c.x_label } }, y: axis(c.y_label, c.log_y) },
          plugins: Object.assign(common.plugins, { legend: { display: false } }) }),
        plugins: [whiskers]
      };
    }
    return {
      type: "scatter",
      data: { datasets: c.series.map(function (s, i) {
        return { label: s.label, showLine: true, borderWidth: 2, pointRadius: s.points.length === 1 ? 6 : s.points.length < 40 ? 3 : 0,
          borderColor: palette[i % palette.length], backgroundColor: palette[i % palette.length],
          data: s.points.filter(function (p) { return (!c.log_x || p[0] > 0) && (!c.log_y || p[1] > 0); })
                        .map(function (p) { return { x: p[0], y: p[1] }; }) };
      }) },
      options: Object.assign(common, { scales: { x: axis(c.x_label, c.log_x), y: axis(c.y_label, c.log_y) } })
    };
  }
  function inked(canvas) {
    try {
      var d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
      for (var i = 3; i < d.length; i += 4) if (d[i] !== 0) return true;
    } catch (e) { fail(e); }
    return false;
  }
  var drawn = 0, ink = 0;
  try {
    var specs = JSON.parse(document.getElementById("wirespeed-charts").textContent);
    if (typeof Chart === "undefined") throw new Error("Chart.js did not load");
    specs.forEach(function (s) {
      var canvas = document.getElementById(s.id);
      try { new Chart(canvas, config(s.chart)); drawn++; if (inked(canvas)) ink++; } catch (e) { fail(s.id + ": " + e); }
    });
  } catch (e) { fail(e); }
  document.body.dataset.charts = String(drawn);
  document.body.dataset.inked = String(ink);
})();
