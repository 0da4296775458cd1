// The console's topic views (docs/topics.md): the topic list, a topic's bindings, log, keyed
// state, publish form and replays, and a queue's sources. Like app.js, API data reaches the
// page only through textContent and element properties.
import * as api from './api.js';

const $ = (id) => document.getElementById(id);

// ui is what app.js lends: its element builder, banner, polling and queue list.
let ui = null;

const state = {
  topics: [],
  current: null,       // the open topic (its last answer)
  tab: 'bindings',
  logCursors: [null], logNext: null,
  stateCursors: [null], stateNext: null,
  replays: [],
};

export function init(lent) {
  ui = lent;
  $('topic-create-form').addEventListener('submit', createTopic);
  for (const b of document.querySelectorAll('#view-topic .tabs button')) b.addEventListener('click', () => selectTab(b.dataset.ttab));
  $('bind-form').addEventListener('submit', bindQueue);
  $('log-refresh').addEventListener('click', () => { state.logCursors = [null]; loadLog().catch(ui.showError); });
  $('log-first').addEventListener('click', () => { state.logCursors = [null]; loadLog().catch(ui.showError); });
  $('log-next').addEventListener('click', () => { state.logCursors.push(state.logNext); loadLog().catch(ui.showError); });
  $('state-refresh').addEventListener('click', () => { state.stateCursors = [null]; loadState().catch(ui.showError); });
  $('state-next').addEventListener('click', () => { state.stateCursors.push(state.stateNext); loadState().catch(ui.showError); });
  $('publish-form').addEventListener('submit', publish);
  $('replay-form').addEventListener('submit', startReplay);
  $('replays-refresh').addEventListener('click', () => loadReplays().catch(ui.showError));
  $('retention-form').addEventListener('submit', saveRetention);
}

// ---- shared helpers ----

const bytes = (n) => n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`;
const attrsText = (a) => Object.entries(a || {}).map(([k, v]) => `${k}=${v}`).join(', ');

// filterText shows a binding's filter object as the filter box takes it (name=value, a name
// once per value).
function filterText(f) {
  if (!f || !f.attributes) return '';
  const out = [];
  for (const [k, v] of Object.entries(f.attributes)) for (const x of [].concat(v)) out.push(`${k}=${x}`);
  return out.join(' ');
}

// pairs reads a filter box: name=value pairs separated by spaces or commas. It throws naming
// the box's label when a part is not name=value.
function pairs(box) {
  const out = [];
  const input = $(box);
  const label = input.closest('label') ? input.closest('label').firstChild.textContent.trim() : 'Filter';
  for (const part of input.value.split(/[\s,]+/).filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0) throw new Error(`${label}: "${part}" is not name=value`);
    out.push([part.slice(0, i), part.slice(i + 1)]);
  }
  return out;
}

// filterObject turns filter pairs into a binding's filter ({"attributes": …}, a name given
// twice listing its values), or null when there are none.
function filterObject(ps) {
  if (!ps.length) return null;
  const attributes = {};
  for (const [k, v] of ps) attributes[k] = k in attributes ? [].concat(attributes[k], v) : v;
  return { attributes };
}

// position reads a from/to box: a sequence (digits) as a number, anything else (now,
// earliest, a time) as typed, and empty as undefined.
function position(box) {
  const v = $(box).value.trim();
  if (!v) return undefined;
  return /^[0-9]+$/.test(v) ? Number(v) : v;
}

// syncRows updates a table body in place: one row per key, made once and updated on every
// render, so a poll never replaces the button under the pointer.
function syncRows(body, rows, items, key, make, update) {
  const seen = new Set();
  let prev = null;
  for (const it of items) {
    const k = key(it);
    seen.add(k);
    let row = rows.get(k);
    if (!row) { row = make(it); rows.set(k, row); }
    update(row, it);
    const want = prev ? prev.nextSibling : body.firstChild;
    if (want !== row.tr) body.insertBefore(row.tr, want);
    prev = row.tr;
  }
  for (const [k, row] of rows) if (!seen.has(k)) { row.tr.remove(); rows.delete(k); }
}

// armed makes a destructive button ask once: the first click relabels it, the second acts.
function armed(label, confirmLabel, act) {
  const b = ui.el('button', { type: 'button', class: 'danger' }, label);
  b.addEventListener('click', async () => {
    if (b.dataset.armed !== '1') { b.dataset.armed = '1'; b.textContent = confirmLabel; return; }
    b.disabled = true;
    try { await act(); } catch (err) { ui.showError(err); b.disabled = false; }
  });
  return b;
}

// topicName names a topic by id from the last listing (a replayed message names its topic
// by id), or answers the id.
export function topicName(id) {
  const tp = state.topics.find((t) => t.id === id);
  return tp ? tp.name : id;
}

// knowTopics lists the topics once if the page has not yet (a queue opened before the Topics
// list), so topicName can name them.
export async function knowTopics() {
  if (!state.topics.length) state.topics = await api.listTopics();
}

// ---- topic list ----

const topicRows = new Map();

export function openTopics() {
  state.current = null;
  ui.show('topics');
  ui.banner(null);
  ui.schedule(async () => { state.topics = await api.listTopics(); renderTopics(); });
}

function topicRow(tp) {
  const cells = {};
  const cell = (k, cls) => (cells[k] = ui.el('td', { class: cls || '', dataset: { col: k } }));
  const open = ui.el('button', { type: 'button', class: 'link', dataset: { topic: tp.name }, onclick: () => openTopic(tp.id) }, tp.name);
  const del = armed('Delete', 'Really delete?', async () => {
    await api.deleteTopic(tp.id);
    ui.banner(`Topic ${tp.name} deleted.`, 'info');
    state.topics = await api.listTopics();
    renderTopics();
  });
  del.dataset.deleteTopic = tp.name;
  const tr = ui.el('tr', { dataset: { topic: tp.name } }, ui.el('td', {}, open), cell('type'), cell('retention', 'num'),
    cell('lastSequence', 'num'), cell('bindings', 'num'), cell('storedBytes', 'num'), ui.el('td', {}, del));
  return { tr, cells };
}

function renderTopics() {
  syncRows($('topics-body'), topicRows, state.topics, (tp) => tp.id, topicRow, (row, tp) => {
    ui.setText(row.cells.type, tp.type);
    ui.setText(row.cells.retention, `${tp.retentionSeconds} s`);
    ui.setText(row.cells.lastSequence, tp.lastSequence);
    ui.setText(row.cells.bindings, tp.bindings);
    ui.setText(row.cells.storedBytes, bytes(tp.storedBytes));
  });
  $('topics-empty').hidden = state.topics.length > 0;
  $('topics-updated').textContent = 'updated ' + new Date().toLocaleTimeString();
}

async function createTopic(ev) {
  ev.preventDefault();
  const body = { name: $('topic-create-name').value.trim(), type: $('topic-create-type').value,
    retentionSeconds: Number($('topic-create-retention').value) };
  try {
    const tp = await api.createTopic(body);
    $('topic-create-name').value = '';
    ui.banner(`Topic ${tp.name} created.`, 'info');
    state.topics = await api.listTopics();
    renderTopics();
  } catch (err) { ui.showError(err); }
}

// ---- one topic ----

function openTopic(id) {
  state.current = state.topics.find((tp) => tp.id === id) || { id, name: '' };
  state.logCursors = [null];
  state.stateCursors = [null];
  for (const box of ['log-from', 'log-to', 'log-filter', 'state-key', 'bind-filter', 'replay-filter', 'replay-from', 'replay-to']) $(box).value = '';
  $('bind-from').value = 'now';
  $('publish-result').textContent = '';
  bindingRows.clear();
  $('bindings-body').replaceChildren();
  replayRows.clear();
  $('replays-body').replaceChildren();
  state.replays = [];
  ui.banner(null);
  ui.show('topic');
  renderTopic(state.current);
  selectTab('bindings');
  ui.schedule(async () => {
    const tp = await api.getTopic(id);
    if (!state.current || state.current.id !== id) return;
    // A topic opened from a queue's sources is known by id alone until this answer: only now
    // can the pickers offer the queues of its type.
    const untyped = !state.current.type;
    renderTopic(tp);
    if (untyped) queueChoices().catch(ui.showError);
    if (state.tab === 'bindings') await loadBindings();
    if (state.tab === 'replay' && state.replays.some((r) => r.status === 'running')) await loadReplays();
  });
}

const isCurrent = (id) => state.current && state.current.id === id;

// refreshTopic rereads the open topic after the page changed it, so its counts do not wait
// for the next poll.
async function refreshTopic() {
  const id = state.current.id;
  const tp = await api.getTopic(id);
  if (isCurrent(id)) renderTopic(tp);
}

function renderTopic(tp) {
  state.current = tp;
  $('topic-title').textContent = tp.name;
  $('topic-kind').textContent = tp.type || '';
  for (const l of document.querySelectorAll('#publish-form .fifo-only')) l.hidden = tp.type !== 'fifo';
  const items = [['Last sequence', 'lastSequence', tp.lastSequence], ['First held', 'firstSequence', tp.firstSequence],
    ['Bindings', 'bindings', tp.bindings], ['Stored', 'storedBytes', tp.storedBytes == null ? '—' : bytes(tp.storedBytes)],
    ['Retention', 'retention', tp.retentionSeconds == null ? '—' : `${tp.retentionSeconds} s`]];
  const counts = $('topic-counts');
  if (counts.children.length !== items.length) {
    counts.replaceChildren(...items.map(([label, key]) => ui.el('div', { dataset: { count: key } }, ui.el('dt', {}, label), ui.el('dd'))));
  }
  items.forEach(([, , v], i) => ui.setText(counts.children[i].lastChild, v == null ? '—' : v));
  const settings = [['Id', tp.id], ['Slug', tp.slug], ['Type', tp.type], ['Created', ui.shortTime(tp.createdAt)], ['Updated', ui.shortTime(tp.updatedAt)]];
  const list = $('topic-settings-list');
  const key = JSON.stringify(settings);
  if (list.dataset.key !== key) {
    list.replaceChildren(...settings.map(([k, v]) => ui.el('div', {}, ui.el('dt', {}, k), ui.el('dd', { class: 'mono' }, v == null ? '—' : v))));
    list.dataset.key = key;
  }
  if (document.activeElement !== $('topic-retention') && tp.retentionSeconds != null) $('topic-retention').value = tp.retentionSeconds;
}

function selectTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll('#view-topic .tabs button')) b.setAttribute('aria-selected', String(b.dataset.ttab === tab));
  for (const p of document.querySelectorAll('#view-topic .tpane')) p.hidden = p.id !== 'tpane-' + tab;
  ui.banner(null);
  // The pickers are refreshed with each visit: a queue may have been created meanwhile.
  if ((tab === 'bindings' || tab === 'replay') && state.current.type) queueChoices().catch(ui.showError);
  if (tab === 'bindings') loadBindings().catch(ui.showError);
  if (tab === 'log') loadLog().catch(ui.showError);
  if (tab === 'state') loadState().catch(ui.showError);
  if (tab === 'replay') loadReplays().catch(ui.showError);
}

// queueChoices fills the bind and replay queue pickers with the queues of the topic's type.
async function queueChoices() {
  await ui.refreshQueues();
  const tp = state.current;
  if (!tp) return;
  const fits = ui.queues().filter((q) => !tp.type || q.type === tp.type);
  for (const id of ['bind-queue', 'replay-queue']) {
    const sel = $(id);
    const keep = sel.value;
    sel.replaceChildren(...fits.map((q) => ui.el('option', { value: q.id }, q.name)));
    if (fits.some((q) => q.id === keep)) sel.value = keep;
  }
}

// ---- bindings ----

const bindingRows = new Map();

function bindingRow(b) {
  const cells = {};
  const cell = (k, cls) => (cells[k] = ui.el('td', { class: cls || '', dataset: { col: k } }));
  const queue = ui.el('button', { type: 'button', class: 'link', onclick: () => ui.openQueue(b.queueId) });
  const edit = ui.el('button', { type: 'button', dataset: { editFilter: b.queue } }, 'Edit filter');
  const unbind = armed('Unbind', 'Really unbind?', async () => {
    await api.unbind(b.queueId, b.id);
    ui.banner(`${b.queue} unbound.`, 'info');
    await Promise.all([loadBindings(), refreshTopic()]);
  });
  unbind.dataset.unbind = b.queue;
  const tr = ui.el('tr', { dataset: { binding: b.id, queue: b.queue } }, ui.el('td', {}, queue), cell('filter', 'mono'),
    cell('sequence', 'num'), cell('lag', 'num'), cell('copied', 'num'), cell('failed', 'num'), cell('lastFailure'),
    ui.el('td', { class: 'actions' }, edit, ' ', unbind));
  const row = { tr, cells, queue, b };
  edit.addEventListener('click', () => editFilter(row));
  return row;
}

async function loadBindings() {
  const tp = state.current;
  const res = await api.topicBindings(tp.id);
  if (!isCurrent(tp.id)) return;
  syncRows($('bindings-body'), bindingRows, res.bindings, (b) => b.id, bindingRow, (row, b) => {
    row.b = b;
    ui.setText(row.queue, b.queue);
    if (row.cells.filter.dataset.editing !== '1') ui.setText(row.cells.filter, filterText(b.filter) || 'everything');
    ui.setText(row.cells.sequence, b.sequence);
    ui.setText(row.cells.lag, b.lag);
    ui.setText(row.cells.copied, b.copied);
    ui.setText(row.cells.failed, b.failed);
    ui.setText(row.cells.lastFailure, b.lastFailure ? `${b.lastFailure.reason} at ${ui.shortTime(b.lastFailure.at)}` : '—');
  });
  $('bindings-empty').hidden = res.bindings.length > 0;
}

// editFilter swaps the filter cell for a box and Save / Cancel; an empty box removes the
// filter. The poll leaves the cell alone meanwhile (its text is set only when it changes, and
// the box stays until saved or cancelled).
function editFilter(row) {
  const cell = row.cells.filter;
  if (cell.dataset.editing === '1') return;
  cell.dataset.editing = '1';
  const box = ui.el('input', { size: 24, value: filterText(row.b.filter), id: 'filter-edit-' + row.b.id, placeholder: 'name=value … (empty: everything)' });
  const done = () => { cell.dataset.editing = ''; cell.replaceChildren(filterText(row.b.filter) || 'everything'); };
  const save = ui.el('button', { type: 'button', dataset: { saveFilter: row.b.queue } }, 'Save');
  save.addEventListener('click', async () => {
    try {
      const b = await api.setFilter(row.b.queueId, row.b.id, filterObject(pairs(box.id)));
      row.b = b;
      done();
      ui.banner(`Filter of ${b.queue} saved.`, 'info');
      await loadBindings();
    } catch (err) { ui.showError(err); }
  });
  const cancel = ui.el('button', { type: 'button', onclick: done }, 'Cancel');
  cell.replaceChildren(box, ' ', save, ' ', cancel);
  box.focus();
}

async function bindQueue(ev) {
  ev.preventDefault();
  const tp = state.current;
  try {
    const body = { topic: tp.id, filter: filterObject(pairs('bind-filter')) };
    const from = position('bind-from');
    if (from !== undefined) body.from = from;
    const b = await api.bind($('bind-queue').value, body);
    ui.banner(`${b.queue} bound from sequence ${b.startSequence}.`, 'info');
    $('bind-filter').value = '';
    await Promise.all([loadBindings(), refreshTopic()]);
  } catch (err) { ui.showError(err); }
}

// ---- log ----

async function loadLog() {
  const tp = state.current;
  const cursor = state.logCursors[state.logCursors.length - 1];
  const page = await api.readLog(tp.id, { from: position('log-from'), to: position('log-to'), cursor, filter: pairs('log-filter') });
  if (!isCurrent(tp.id)) return;
  state.logNext = page.nextCursor;
  $('log-next').disabled = !page.nextCursor;
  $('log-first').disabled = state.logCursors.length === 1;
  $('log-page').textContent = `page ${state.logCursors.length}`;
  $('log-body').replaceChildren(...page.messages.map((m) => ui.el('tr', { dataset: { sequence: m.sequence, messageId: m.messageId } },
    ui.el('td', { class: 'num' }, m.sequence), ui.el('td', { class: 'mono' }, m.messageId),
    ui.el('td', { class: 'body', title: m.body == null ? '' : m.body }, m.deleted ? '(key deleted)' : m.body),
    ui.el('td', { class: 'mono' }, attrsText(m.attributes)), ui.el('td', { class: 'mono' }, m.key || '—'),
    ui.el('td', {}, m.groupId || '—'), ui.el('td', {}, ui.shortTime(m.publishedAt)))));
  $('log-empty').hidden = page.messages.length > 0;
  $('log-empty').textContent = page.nextCursor ? 'No matching entries among those this page examined: try the next page.' : 'No entries.';
}

// ---- keyed state ----

function stateRow(s) {
  return ui.el('tr', { dataset: { key: s.key } }, ui.el('td', { class: 'mono' }, s.key), ui.el('td', { class: 'body', title: s.body }, s.body),
    ui.el('td', { class: 'mono' }, attrsText(s.attributes)), ui.el('td', { class: 'num' }, s.sequence), ui.el('td', {}, ui.shortTime(s.publishedAt)));
}

async function loadState() {
  const tp = state.current;
  const key = $('state-key').value;
  let rows = [];
  let next = null;
  if (key) {
    try { rows = [await api.stateKey(tp.id, key)]; } catch (err) { if (!(err instanceof api.APIError && err.status === 404)) throw err; }
  } else {
    const page = await api.listState(tp.id, state.stateCursors[state.stateCursors.length - 1]);
    rows = page.state;
    next = page.nextCursor;
  }
  if (!isCurrent(tp.id)) return;
  state.stateNext = next;
  $('state-next').disabled = !next;
  $('state-body').replaceChildren(...rows.map(stateRow));
  $('state-empty').hidden = rows.length > 0;
  $('state-empty').textContent = key ? `The key ${key} has no state.` : 'No keyed state.';
}

// ---- publish ----

function publishMessage() {
  const tp = state.current;
  const key = $('publish-key').value;
  const del = $('publish-delete').checked;
  if (del && !key) throw new Error('publish: deleting needs a key');
  const m = { body: del ? null : $('publish-body').value };
  const attrs = ui.parseAttrs($('publish-attrs').value);
  if (Object.keys(attrs).length) m.attributes = attrs;
  if (key) {
    m.key = key;
    if (!del) m.merge = $('publish-merge').value;
  }
  if (tp.type === 'fifo') {
    m.groupId = $('publish-group').value;
    if ($('publish-dedup').value) m.dedupId = $('publish-dedup').value;
  }
  return m;
}

async function publish(ev) {
  ev.preventDefault();
  const tp = state.current;
  try {
    const res = await api.publish(tp.id, [publishMessage()]);
    if (res.failed.length) {
      const e = res.failed[0].error;
      ui.banner(`${e.code}: ${e.message}${e.details && e.details.field ? ` (field ${e.details.field})` : ''}`);
      return;
    }
    const m = res.messages[0];
    ui.banner(null);
    $('publish-result').textContent = `Published ${m.messageId} at sequence ${m.sequence}${m.duplicate ? ' (duplicate of an earlier publish)' : ''}.`;
    $('publish-result').dataset.messageId = m.messageId;
    $('publish-result').dataset.sequence = m.sequence;
    await refreshTopic();
  } catch (err) { ui.showError(err); }
}

// ---- replays ----

const replayRows = new Map();

function replayRow(r) {
  const cells = {};
  const cell = (k, cls) => (cells[k] = ui.el('td', { class: cls || '', dataset: { col: k } }));
  const cancel = ui.el('button', { type: 'button', class: 'danger', dataset: { cancelReplay: r.id } }, 'Cancel');
  cancel.addEventListener('click', async () => {
    try {
      const got = await api.cancelReplay(state.current.id, r.id);
      ui.banner(`Replay into ${got.queue} ${got.status}: ${got.moved} of ${got.toMove} copied.`, 'info');
      await loadReplays();
    } catch (err) { ui.showError(err); }
  });
  const tr = ui.el('tr', { dataset: { replay: r.id } }, cell('startedAt'), cell('queue'), cell('range', 'num'), cell('filter', 'mono'),
    cell('status'), cell('moved', 'num'), cell('failed', 'num'), cell('rate', 'num'), ui.el('td', {}, cancel));
  return { tr, cells, cancel };
}

function renderReplay(row, r) {
  ui.setText(row.cells.startedAt, ui.shortTime(r.startedAt));
  ui.setText(row.cells.queue, r.queue == null ? '(deleted)' : r.queue);
  ui.setText(row.cells.range, `${r.from}–${r.to}`);
  ui.setText(row.cells.filter, filterText(r.filter) || 'everything');
  ui.setText(row.cells.status, r.status + (r.dryRun ? ' (dry run)' : '') + (r.error ? `: ${r.error}` : ''));
  row.cells.status.className = 'status-' + r.status;
  ui.setText(row.cells.moved, r.dryRun ? `${r.toMove} to copy` : `${r.moved} of ${r.toMove}`);
  ui.setText(row.cells.failed, r.failed);
  ui.setText(row.cells.rate, `${r.maxMessagesPerSecond}/s`);
  row.cancel.hidden = r.status !== 'running';
}

async function loadReplays() {
  const tp = state.current;
  const res = await api.replays(tp.id);
  if (!isCurrent(tp.id)) return;
  state.replays = res.replays;
  syncRows($('replays-body'), replayRows, res.replays, (r) => r.id, replayRow, renderReplay);
  $('replays-empty').hidden = res.replays.length > 0;
}

async function startReplay(ev) {
  ev.preventDefault();
  const tp = state.current;
  try {
    const body = { queue: $('replay-queue').value, from: position('replay-from'), filter: filterObject(pairs('replay-filter')),
      maxMessagesPerSecond: Number($('replay-rate').value), dryRun: $('replay-dry').checked };
    const to = position('replay-to');
    if (to !== undefined) body.to = to;
    const r = await api.startReplay(tp.id, body);
    ui.banner(r.dryRun && r.status === 'completed' ? `Dry run: ${r.toMove} entries would be copied.` : `Replay into ${r.queue} started.`, 'info');
    await Promise.all([loadReplays(), refreshTopic()]);
  } catch (err) { ui.showError(err); }
}

async function saveRetention(ev) {
  ev.preventDefault();
  const tp = state.current;
  try {
    const got = await api.updateTopic(tp.id, { retentionSeconds: Number($('topic-retention').value) });
    if (isCurrent(got.id)) renderTopic(got);
    ui.banner('Retention saved.', 'info');
  } catch (err) { ui.showError(err); }
}

// ---- a queue's sources ----

// loadSources shows the topics a queue is bound to (the queue page's Sources tab).
export async function loadSources(queueId) {
  const res = await api.sources(queueId);
  $('sources-body').replaceChildren(...res.sources.map((b) => ui.el('tr', { dataset: { binding: b.id, topic: b.topic } },
    ui.el('td', {}, ui.el('button', { type: 'button', class: 'link', onclick: () => openTopic(b.topicId) }, b.topic)),
    ui.el('td', { class: 'mono' }, filterText(b.filter) || 'everything'), ui.el('td', { class: 'num', dataset: { col: 'sequence' } }, b.sequence),
    ui.el('td', { class: 'num', dataset: { col: 'lag' } }, b.lag), ui.el('td', { class: 'num', dataset: { col: 'copied' } }, b.copied),
    ui.el('td', { class: 'num' }, b.failed), ui.el('td', {}, b.lastFailure ? `${b.lastFailure.reason} at ${ui.shortTime(b.lastFailure.at)}` : '—'))));
  $('sources-empty').hidden = res.sources.length > 0;
}
