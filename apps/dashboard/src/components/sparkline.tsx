/**
 * Per-minute counts as a small SVG area chart: hand-drawn, since two series
 * of sixty points do not need a charting library.
 */
export function Sparkline(props: { series: { values: number[]; class: string }[]; label: string }) {
  const width = 120;
  const height = 28;
  const length = Math.max(1, ...props.series.map((s) => s.values.length));
  const peak = Math.max(1, ...props.series.flatMap((s) => s.values));
  const x = (i: number) => (length === 1 ? width : (i / (length - 1)) * width);
  const y = (value: number) => height - 1 - (value / peak) * (height - 2);
  return (
    <svg
      class="sparkline"
      viewBox={`0 0 ${width} ${height}`}
      preserveAspectRatio="none"
      role="img"
      aria-label={props.label}
    >
      <title>{props.label}</title>
      <line x1={0} x2={width} y1={height - 0.5} y2={height - 0.5} class="axis" />
      {props.series
        .filter((s) => s.values.some((value) => value > 0))
        .map((s) => {
          const line = s.values.map((v, i) => `${i === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
          return (
            <g key={s.class} class={s.class}>
              <path d={`${line} L${width},${height} L0,${height} Z`} class="area" />
              <path d={line} class="line" />
            </g>
          );
        })}
    </svg>
  );
}
