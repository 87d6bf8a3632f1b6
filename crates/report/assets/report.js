// Draws the report's plots from the JSON embedded in the page.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("h3lab-plot-data").textContent);
  var config = {
    displaylogo: false,
    responsive: true,
    modeBarButtonsToRemove: ["sendDataToCloud", "select2d", "lasso2d"],
    toImageButtonOptions: { format: "png", scale: 2 }
  };
  var font = { family: "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif", size: 13, color: "#1f2933" };

  function colour(protocol) {
    return data.colours[protocol] || "#000000";
  }

  function translucent(hex, alpha) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + alpha + ")";
  }

  function baseLayout(title) {
    return {
      title: { text: title, font: { size: 15 }, x: 0.02, xanchor: "left" },
      font: font,
      margin: { l: 70, r: 20, t: 50, b: 55 },
      paper_bgcolor: "#ffffff",
      plot_bgcolor: "#ffffff",
      legend: { orientation: "h", y: -0.18 },
      hoverlabel: { font: { family: font.family } }
    };
  }

  // Grouped plots draw one trace per protocol spanning every category, so
  // plotly places the protocols side by side within each category.
  function byProtocol(traces) {
    var merged = [];
    var index = {};
    traces.forEach(function (t) {
      if (!(t.protocol in index)) {
        index[t.protocol] = merged.length;
        merged.push({ protocol: t.protocol, categories: [], samples: [] });
      }
      var m = merged[index[t.protocol]];
      t.samples.forEach(function (v) { m.categories.push(t.category); m.samples.push(v); });
    });
    return merged;
  }

  // One protocol's violin with its samples shown as points, in the look
  // the grouped and ungrouped plots share.
  function violinTrace(protocol, x, y, markerSize, markerOpacity) {
    return {
      type: "violin",
      name: protocol,
      legendgroup: protocol,
      x: x,
      y: y,
      box: { visible: true, width: 0.25, fillcolor: "#ffffff", line: { color: "#333333" } },
      meanline: { visible: true },
      points: "all",
      pointpos: 0,
      jitter: 0.35,
      marker: { color: colour(protocol), size: markerSize, opacity: markerOpacity, line: { width: 0.5, color: "#ffffff" } },
      line: { color: colour(protocol), width: 1.5 },
      fillcolor: translucent(colour(protocol), 0.3),
      spanmode: "hard",
      scalemode: "width"
    };
  }

  function drawViolin(plot) {
    if (plot.grouped) { return drawGroupedViolin(plot); }
    var legendShown = {};
    var traces = plot.traces.map(function (t) {
      var first = !legendShown[t.protocol];
      legendShown[t.protocol] = true;
      var trace = violinTrace(t.protocol, t.samples.map(function () { return t.category; }), t.samples, 5, 0.75);
      trace.showlegend = first;
      trace.hovertemplate = t.protocol + " " + t.category + ": %{y}<extra>n=" + t.samples.length + "</extra>";
      return trace;
    });
    var layout = baseLayout(plot.title);
    layout.violinmode = plot.grouped ? "group" : "overlay";
    // Ungrouped violins are already labelled by protocol on the x axis.
    layout.showlegend = plot.grouped;
    layout.yaxis = { title: { text: plot.axis }, zeroline: false, gridcolor: "#e4e7eb" };
    layout.xaxis = { type: "category" };
    return Plotly.newPlot(plot.id, traces, layout, config);
  }

  function drawGroupedViolin(plot) {
    var traces = byProtocol(plot.traces).map(function (t) {
      var trace = violinTrace(t.protocol, t.categories, t.samples, 4, 0.7);
      trace.offsetgroup = t.protocol;
      trace.hovertemplate = t.protocol + " %{x}: %{y}<extra></extra>";
      return trace;
    });
    var layout = baseLayout(plot.title);
    layout.violinmode = "group";
    layout.showlegend = true;
    layout.yaxis = { title: { text: plot.axis }, zeroline: false, gridcolor: "#e4e7eb" };
    layout.xaxis = { type: "category" };
    return Plotly.newPlot(plot.id, traces, layout, config);
  }

  // Ticks at 1-2-5 steps covering [low, high], labelled in plain ms.
  function logTicks(low, high) {
    var ticks = [];
    for (var decade = Math.pow(10, Math.floor(Math.log10(low))); decade <= high * 10; decade *= 10) {
      [1, 2, 5].forEach(function (step) {
        var tick = step * decade;
        if (tick >= low / 1.5 && tick <= high * 1.5) { ticks.push(Number(tick.toPrecision(3))); }
      });
    }
    return ticks;
  }

  function drawCdf(plot) {
    var traces = plot.traces.map(function (t) {
      return {
        type: "scatter",
        mode: "lines",
        name: t.name,
        x: t.latency_ms,
        y: t.fraction,
        line: { color: colour(t.protocol), width: 2.5, shape: "hv", dash: t.name === t.protocol ? "solid" : "dot" },
        hovertemplate: t.name + ": %{y:.1%} ≤ %{x} ms<extra></extra>"
      };
    });
    var layout = baseLayout(plot.title);
    layout.legend = {
      x: 0.98, xanchor: "right", y: 0.04, yanchor: "bottom",
      bgcolor: "rgba(255,255,255,0.85)", bordercolor: "#d9dee4", borderwidth: 1
    };
    var all = [].concat.apply([], plot.traces.map(function (t) { return t.latency_ms; })).filter(function (v) { return v > 0; });
    var low = Math.min.apply(null, all), high = Math.max.apply(null, all);
    var ticks = logTicks(low, high);
    var shown = ticks.filter(function (tick) { return tick >= low && tick <= high; });
    // Latencies within a fraction of a decade (a few requests of one size)
    // would get no 1-2-5 tick in view on a log axis: a linear one has ticks.
    layout.xaxis = shown.length >= 2 ? {
      title: { text: "latency (ms, log scale)" }, type: "log", gridcolor: "#e4e7eb",
      tickmode: "array", tickvals: ticks, ticktext: ticks.map(String)
    } : { title: { text: "latency (ms)" }, type: "linear", gridcolor: "#e4e7eb" };
    layout.yaxis = { title: { text: "fraction of requests ≤ x" }, range: [0, 1.02], tickformat: ".0%", gridcolor: "#e4e7eb" };
    return Plotly.newPlot(plot.id, traces, layout, config);
  }

  function drawCpuPerGb(plot) {
    var bar = function (name, values, pattern) {
      return {
        type: "bar",
        name: name,
        x: plot.protocols,
        y: values,
        marker: { color: plot.protocols.map(colour), pattern: { shape: pattern, fgcolor: "#ffffff" } },
        hovertemplate: name + " %{x}: %{y:.2f} s/GB<extra></extra>"
      };
    };
    var traces = [bar("server", plot.server_s, ""), bar("client (whole run)", plot.client_s, "/")];
    var layout = baseLayout(plot.title);
    layout.barmode = "group";
    layout.xaxis = { title: { text: "protocol" }, type: "category" };
    layout.yaxis = { title: { text: "CPU seconds per GB" }, rangemode: "tozero", gridcolor: "#e4e7eb" };
    return Plotly.newPlot(plot.id, traces, layout, config);
  }

  // A field run's measured round trip per cell, in run order: one line
  // per protocol, so a drift that hits one protocol's loads shows.
  function drawDrift(plot) {
    var traces = plot.traces.map(function (t) {
      return {
        type: "scatter",
        mode: "lines+markers",
        name: t.protocol,
        x: t.x,
        y: t.y,
        line: { color: colour(t.protocol), width: 1 },
        marker: { color: colour(t.protocol), size: 5 },
        hovertemplate: t.protocol + " cell %{x}: %{y:.1f} ms<extra></extra>"
      };
    });
    var layout = baseLayout(plot.title);
    layout.xaxis = { title: { text: "cell, in run order" }, gridcolor: "#e4e7eb" };
    layout.yaxis = { title: { text: "measured round trip (ms)" }, rangemode: "tozero", gridcolor: "#e4e7eb" };
    return Plotly.newPlot(plot.id, traces, layout, config);
  }

  data.violins.forEach(drawViolin);
  data.cdfs.forEach(drawCdf);
  data.cpu_per_gb.forEach(drawCpuPerGb);
  data.drift.forEach(drawDrift);
})();
