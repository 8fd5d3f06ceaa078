// The Metrics tab (pages/pod/metrics.tsx): four uPlot charts from the page's own JSON block
// (columns: seconds, cpu %, memory %, disk bytes, bytes in, bytes out). Resized with the window.
(() => {
  const block = document.getElementById("metrics-data");
  const box = document.querySelector("[data-metrics-charts]");
  if (!block || !box || typeof uPlot === "undefined") return;
  const { columns } = JSON.parse(block.textContent || "{}");
  const [t, cpu, mem, disk, rx, tx] = columns;
  const bytes = (_u, values) =>
    values.map((v) => {
      if (v == null) return "";
      const units = ["B", "KB", "MB", "GB", "TB"];
      let i = 0;
      let n = v;
      while (Math.abs(n) >= 1000 && i < units.length - 1) {
        n /= 1000;
        i++;
      }
      return `${Math.round(n * 10) / 10} ${units[i]}`;
    });
  const percent = (_u, values) => values.map((v) => (v == null ? "" : `${v}%`));
  const charts = {
    cpu: {
      series: [{ label: "CPU", stroke: "#2563eb", fill: "rgba(37,99,235,0.1)" }],
      data: [cpu],
      values: percent,
    },
    memory: {
      series: [{ label: "Memory", stroke: "#7c3aed", fill: "rgba(124,58,237,0.1)" }],
      data: [mem],
      values: percent,
    },
    disk: { series: [{ label: "Disk", stroke: "#059669" }], data: [disk], values: bytes },
    network: {
      series: [
        { label: "In", stroke: "#0891b2" },
        { label: "Out", stroke: "#ea580c" },
      ],
      data: [rx, tx],
      values: bytes,
    },
  };
  const widthOf = (el) => Math.max(240, Math.floor(el.clientWidth));
  const plots = [];
  for (const figure of box.querySelectorAll("[data-chart]")) {
    const chart = charts[figure.getAttribute("data-chart")];
    if (!chart) continue;
    const opts = {
      width: widthOf(figure),
      height: 180,
      series: [
        {},
        ...chart.series.map((s) => ({ ...s, width: 1.5, value: (u, v) => chart.values(u, [v])[0] })),
      ],
      axes: [{}, { values: chart.values, size: 70 }],
      legend: { show: true },
    };
    const plot = new uPlot(opts, [t, ...chart.data], figure);
    plots.push([plot, figure]);
  }
  let pending = 0;
  window.addEventListener("resize", () => {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(() => {
      for (const [plot, figure] of plots) plot.setSize({ width: widthOf(figure), height: 180 });
    });
  });
})();
