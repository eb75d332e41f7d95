// The results page: saved speed tests as a filterable table, median speeds by ISP and by
// region, and median latency under load by ISP with its bufferbloat grade. Every stored string reaches the page through textContent, never as markup.
'use strict';
(function () {
  const $ = (id) => document.getElementById(id);
  const charts = {};
  const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  const mbps = (bps) => (bps == null ? '–' : (bps / 1e6).toFixed(bps >= 1e9 ? 0 : 2));
  const ms = (v) => (v == null ? '–' : v.toFixed(2));
  const utc = (t) => new Date(t).toISOString().replace('T', ' ').slice(0, 19);
  const marked = new URLSearchParams(location.search).get('id');

  function cell(row, text, cls) {
    const td = document.createElement('td');
    td.textContent = text;
    if (cls) td.className = cls;
    row.appendChild(td);
    return td;
  }

  function query() {
    const p = new URLSearchParams();
    for (const [k, v] of new FormData($('filters'))) if (v) p.set(k, v);
    return p.toString();
  }

  // A horizontal bar chart of the largest `groups`: one bar per dataset, `axis` under it.
  function bars(id, title, axis, labels, datasets) {
    if (charts[id]) charts[id].destroy();
    charts[id] = new Chart($(id), {
      type: 'bar',
      data: { labels, datasets },
      options: {
        animation: false,
        indexAxis: 'y',
        plugins: { title: { display: true, text: title, color: css('--fg') }, legend: { labels: { color: css('--fg') } } },
        scales: {
          x: { title: { display: true, text: axis, color: css('--muted') }, ticks: { color: css('--muted') } },
          y: { ticks: { color: css('--fg') } },
        },
      },
    });
  }

  function speedChart(id, title, groups) {
    const top = groups.slice(0, 12);
    bars(id, title, 'Median (Mbit/s)', top.map((g) => `${g.name} (${g.count})`), [
      { label: 'Download', data: top.map((g) => (g.download_bps ?? 0) / 1e6), backgroundColor: css('--dl') },
      { label: 'Upload', data: top.map((g) => (g.upload_bps ?? 0) / 1e6), backgroundColor: css('--ul') },
    ]);
  }

  // Idle against loaded round trips, each group labelled with its grade (groups that never
  // measured latency under load, such as LibreSpeed clients', are left out).
  function latencyChart(id, title, groups) {
    const top = groups.filter((g) => g.latency_grade).slice(0, 12);
    bars(id, title, 'Median round trip (ms)', top.map((g) => `${g.latency_grade} · ${g.name} (${g.count})`), [
      { label: 'Idle', data: top.map((g) => g.ping_ms ?? 0), backgroundColor: css('--muted') },
      { label: 'Loaded ↓', data: top.map((g) => g.latency_down_ms ?? 0), backgroundColor: css('--dl') },
      { label: 'Loaded ↑', data: top.map((g) => g.latency_up_ms ?? 0), backgroundColor: css('--ul') },
    ]);
  }

  async function remove(id, row) {
    const r = await fetch(`../api/results/${encodeURIComponent(id)}`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${$('password').value}` },
    });
    if (r.ok) row.remove();
    else alert((await r.text()).trim());
  }

  async function load() {
    document.body.dataset.state = 'loading';
    const q = query();
    $('csv').href = `../api/results.csv${q ? `?${q}` : ''}`;
    $('json').href = `../api/results${q ? `?${q}` : ''}`;
    const r = await fetch(`../api/results${q ? `?${q}` : ''}`, { cache: 'no-store' });
    if (!r.ok) {
      $('summary').textContent = `Cannot list results: ${(await r.text()).trim()}`;
      document.body.dataset.state = 'error';
      return;
    }
    const data = await r.json();
    $('admin').hidden = !data.admin;
    $('summary').textContent = data.saving
      ? `${data.results.length} result${data.results.length === 1 ? '' : 's'}.`
      : 'This server does not save results.';
    const body = $('rows');
    body.replaceChildren();
    for (const x of data.results) {
      const row = document.createElement('tr');
      row.dataset.id = x.id;
      if (x.id === marked) row.className = 'mark';
      cell(row, utc(x.created_ms));
      cell(row, x.network);
      cell(row, x.isp);
      cell(row, [x.region, x.country].filter(Boolean).join(', '));
      cell(row, mbps(x.download_bps) + (x.download_by_server ? '' : ' *'), 'num');
      cell(row, mbps(x.upload_bps) + (x.upload_by_server ? '' : ' *'), 'num');
      cell(row, ms(x.ping_ms), 'num');
      cell(row, ms(x.jitter_ms), 'num');
      cell(row, ms(x.latency_down_ms), 'num');
      cell(row, ms(x.latency_up_ms), 'num');
      cell(row, x.latency_grade ?? '–', 'grade');
      cell(row, x.user_agent).title = x.lang;
      const actions = cell(row, '');
      if (data.admin) {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'quiet';
        b.textContent = 'Delete';
        b.addEventListener('click', () => remove(x.id, row));
        actions.appendChild(b);
      }
      body.appendChild(row);
    }
    speedChart('chart-isp', 'By ISP', data.by_isp);
    speedChart('chart-region', 'By region', data.by_region);
    latencyChart('chart-latency', 'Latency under load by ISP', data.by_isp);
    document.body.dataset.state = 'ready';
  }

  $('filters').addEventListener('submit', (e) => { e.preventDefault(); load(); });
  load().catch((e) => {
    $('summary').textContent = `Cannot list results: ${e.message}`;
    document.body.dataset.state = 'error';
  });
})();
