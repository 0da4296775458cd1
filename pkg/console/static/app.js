// The console's views. API data reaches the page only through textContent and element
// properties, never as markup.
import * as api from './api.js';
import * as topics from './topics.js';

const $ = (id) => document.getElementById(id);
const POLL_MS = 1000;

const state = {
  queues: [],          // the last listing
  byId: new Map(),     // queue id -> queue
  samples: new Map(),  // queue id -> {t, total} of the previous poll, for the backlog rate
  rates: new Map(),    // queue id -> messages per second (backlog change)
  current: null,       // the open queue
  tab: 'messages',
  browseCursors: [null], browseNext: null,
  dlqCursors: [null], dlqNext: null,
  sub: null,
  task: null,          // the open dead-letter queue's latest move task (redrive)
  timer: null,
};

// el builds an element; text children become text nodes.
function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === 'class') e.className = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
  return e;
}

function banner(msg, kind = 'error') {
  const b = $('banner');
  if (!msg) { b.hidden = true; b.textContent = ''; return; }
  b.className = kind === 'info' ? 'info' : '';
  b.textContent = msg;
  b.hidden = false;
}

function showError(err) {
  if (err instanceof api.APIError && err.status === 401) { signOut('Your token was refused (401). Sign in again.'); return; }
  const field = err.details && err.details.field ? ` (field ${err.details.field})` : '';
  banner(err instanceof api.APIError ? `${err.code}: ${err.message}${field}` : String(err.message || err));
}

function show(view) {
  for (const v of ['signin', 'queues', 'queue', 'topics', 'topic']) $('view-' + v).hidden = v !== view;
  $('nav').hidden = view === 'signin';
  document.body.dataset.view = view;
}

const age = (s, c) => s == null || (c && total(c) === 0) ? '—' : s < 60 ? `${s}s` : s < 3600 ? `${Math.floor(s / 60)}m` : `${Math.floor(s / 3600)}h`;
const shortTime = (t) => t ? t.replace('T', ' ').replace('Z', '') : '—';
const total = (c) => c.visible + c.inFlight + c.delayed;
const queueName = (id) => (state.byId.get(id) || {}).name || id;

// dlqSources lists the queues whose redrive names id.
const dlqSources = (id) => state.queues.filter((q) => q.redrive && q.redrive.deadLetterQueue === id);

// ---- sign in ----

async function signIn(tok) {
  api.setToken(tok);
  try {
    await api.listQueues(1);
  } catch (err) {
    api.clearToken();
    banner(err instanceof api.APIError && err.status === 401 ? 'That token was refused.' : `Sign-in failed: ${err.message}`);
    return;
  }
  banner(null);
  openQueues();
}

function signOut(msg) {
  api.clearToken();
  stopPolling();
  state.current = null;
  $('signin-token').value = '';
  show('signin');
  banner(msg || null, 'info');
}

// ---- polling ----

// One polling loop at a time: each schedule starts a new generation, and a tick of an older
// one (still awaiting its answer when the view changed) does not reschedule itself.
let generation = 0;

function stopPolling() {
  generation++;
  if (state.timer) clearTimeout(state.timer);
  state.timer = null;
}

function schedule(fn) {
  stopPolling();
  const mine = generation;
  const tick = async () => {
    // A hidden tab does not poll (it catches up on the next tick once shown).
    if (!document.hidden) {
      try { await fn(); } catch (err) { if (mine === generation) showError(err); }
    }
    if (mine === generation && api.token()) state.timer = setTimeout(tick, POLL_MS);
  };
  tick();
}

async function refreshQueues() {
  const qs = await api.listQueues();
  const now = performance.now();
  state.queues = qs;
  state.byId = new Map(qs.map((q) => [q.id, q]));
  for (const q of qs) {
    const prev = state.samples.get(q.id);
    const t = total(q.counts);
    if (prev && now > prev.t) state.rates.set(q.id, ((t - prev.total) * 1000) / (now - prev.t));
    state.samples.set(q.id, { t: now, total: t });
  }
}

// ---- queue list ----

function openQueues() {
  state.current = null;
  show('queues');
  schedule(async () => { await refreshQueues(); renderQueues(); });
}

// renderQueues updates the table in place: rows are kept per queue and only their text
// changes, so a poll never replaces what the user is about to click.
const rowsById = new Map();

function queueRow(q) {
  const cells = {};
  const cell = (key, cls) => (cells[key] = el('td', cls ? { class: cls, dataset: { count: key } } : {}));
  const button = el('button', { type: 'button', class: 'link', dataset: { queue: q.name }, onclick: () => openQueue(q.id) }, q.name);
  const badge = el('span', { class: 'badge dlq', hidden: true }, 'dead-letter queue');
  const tr = el('tr', { dataset: { queue: q.name } }, el('td', {}, button, ' ', badge), cell('type'),
    cell('visible', 'num'), cell('inFlight', 'num'), cell('delayed', 'num'), cell('oldest', 'num'), cell('rate', 'num'), cell('redrive'));
  return { tr, cells, badge };
}

function setText(node, text) {
  const t = String(text);
  if (node.textContent !== t) node.textContent = t;
}

function renderQueues() {
  const body = $('queues-body');
  const seen = new Set();
  let prev = null;
  for (const q of state.queues) {
    seen.add(q.id);
    let row = rowsById.get(q.id);
    if (!row) { row = queueRow(q); rowsById.set(q.id, row); }
    const rate = state.rates.get(q.id);
    row.badge.hidden = dlqSources(q.id).length === 0;
    setText(row.cells.type, q.type);
    setText(row.cells.visible, q.counts.visible);
    setText(row.cells.inFlight, q.counts.inFlight);
    setText(row.cells.delayed, q.counts.delayed);
    setText(row.cells.oldest, age(q.counts.oldestMessageAgeSeconds, q.counts));
    setText(row.cells.rate, rate === undefined ? '—' : `${rate >= 0 ? '+' : ''}${rate.toFixed(1)}/s`);
    setText(row.cells.redrive, q.redrive ? `${queueName(q.redrive.deadLetterQueue)} after ${q.redrive.maxReceiveCount}` : '—');
    // Move a row only when it is out of place.
    const want = prev ? prev.nextSibling : body.firstChild;
    if (want !== row.tr) body.insertBefore(row.tr, want);
    prev = row.tr;
  }
  for (const [id, row] of rowsById) if (!seen.has(id)) { row.tr.remove(); rowsById.delete(id); }
  $('queues-empty').hidden = state.queues.length > 0;
  $('queues-updated').textContent = 'updated ' + new Date().toLocaleTimeString();
  const dlq = $('create-dlq');
  const names = state.queues.map((q) => q.id + ' ' + q.name).join(',');
  if (dlq.dataset.names !== names) {
    const keep = dlq.value;
    dlq.replaceChildren(el('option', { value: '' }, 'none'), ...state.queues.map((q) => el('option', { value: q.id }, q.name)));
    dlq.value = state.byId.has(keep) ? keep : '';
    dlq.dataset.names = names;
  }
}

async function createQueue(ev) {
  ev.preventDefault();
  const body = { name: $('create-name').value.trim(), type: $('create-type').value };
  if ($('create-dlq').value) body.redrive = { deadLetterQueue: $('create-dlq').value, maxReceiveCount: Number($('create-maxreceive').value) };
  if ($('create-maxbytes').value) body.maxMessageBytes = Number($('create-maxbytes').value);
  try {
    const q = await api.createQueue(body);
    $('create-name').value = '';
    banner(`Queue ${q.name} created.`, 'info');
    await refreshQueues();
    renderQueues();
  } catch (err) { showError(err); }
}

// ---- one queue ----

function openQueue(id) {
  state.current = id;
  state.sub = null;
  state.task = null;
  state.browseCursors = [null];
  state.dlqCursors = [null];
  $('browse-filter').value = ''; // a filter is for one queue's view
  banner(null);
  show('queue');
  const q = state.byId.get(id);
  const isDLQ = dlqSources(id).length > 0;
  $('tab-deadletters').hidden = !isDLQ;
  selectTab(isDLQ ? 'deadletters' : 'messages');
  schedule(async () => {
    renderQueueHeader(await api.getQueue(id));
    // The attempts log is live while it is on screen, and so is a running redrive.
    if (state.tab === 'subscription' && state.sub && $('secret-box').hidden) { await refreshSubState(); await loadAttempts(); }
    if (state.tab === 'deadletters' && state.task && state.task.status === 'running') await pollRedrive();
    if (state.tab === 'sources') await topics.loadSources(id);
  });
  renderQueueHeader(q);
}

function renderQueueHeader(q) {
  if (!q || q.id !== state.current) return;
  state.byId.set(q.id, q);
  $('queue-title').textContent = q.name;
  const isDLQ = dlqSources(q.id).length > 0;
  $('queue-kind').textContent = q.type + (isDLQ ? ' · dead-letter queue' : '');
  const c = q.counts;
  const counts = $('queue-counts');
  const items = [['Visible', 'visible', c.visible], ['In flight', 'inFlight', c.inFlight], ['Delayed', 'delayed', c.delayed],
    ['Oldest', 'oldest', age(c.oldestMessageAgeSeconds, c)], ['Partitions', 'partitions', q.partitions]];
  if (counts.children.length !== items.length) {
    counts.replaceChildren(...items.map(([label, key]) => el('div', { dataset: { count: key } }, el('dt', {}, label), el('dd'))));
  }
  items.forEach(([, , value], i) => setText(counts.children[i].lastChild, value));
  $('send-group-label').hidden = q.type !== 'fifo';
  $('tab-groups').hidden = q.type !== 'fifo';
  $('groups-policy').textContent = q.onDeadLetter || 'continue';
  const settings = [['Id', q.id], ['Slug', q.slug], ['Visibility timeout', q.visibilityTimeoutSeconds + ' s'],
    ['Retention', q.retentionSeconds + ' s'], ['Delay', q.delaySeconds + ' s'], ['Receive wait', q.receiveWaitSeconds + ' s'],
    ['Redrive', q.redrive ? `${queueName(q.redrive.deadLetterQueue)} after ${q.redrive.maxReceiveCount} receives` : 'none'],
    ['Max message size', q.maxMessageBytes + ' bytes'], ['Created', shortTime(q.createdAt)]];
  // Fifo queues: the group policy (docs/fifo.md "Group policies").
  if (q.groupPolicy) {
    settings.splice(settings.length - 1, 0, ['Group policy', q.groupPolicy === 'exclusive'
      ? `exclusive (affinity ${q.groupAffinitySeconds} s, at most ${q.maxGroupsPerConsumer} groups per consumer)` : q.groupPolicy]);
  }
  // The edit field follows the queue unless the user is typing in it.
  const maxBytes = $('settings-maxbytes');
  if (document.activeElement !== maxBytes && maxBytes.dataset.shown !== String(q.maxMessageBytes)) {
    maxBytes.value = q.maxMessageBytes;
    maxBytes.dataset.shown = String(q.maxMessageBytes);
  }
  const list = $('settings-list');
  const key = JSON.stringify(settings);
  if (list.dataset.key !== key) {
    list.replaceChildren(...settings.map(([k, v]) => el('div', {}, el('dt', {}, k), el('dd', { class: 'mono' }, v))));
    list.dataset.key = key;
  }
}

function selectTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll('#view-queue .tabs button')) b.setAttribute('aria-selected', String(b.dataset.tab === tab));
  for (const p of document.querySelectorAll('#view-queue .pane')) p.hidden = p.id !== 'pane-' + tab;
  banner(null);
  if (tab === 'messages') loadBrowse().catch(showError);
  if (tab === 'deadletters') { loadDLQ().catch(showError); loadRedrive().catch(showError); }
  if (tab === 'groups') { state.groupsCursor = undefined; loadGroups().catch(showError); }
  if (tab === 'subscription') loadSubscription().catch(showError);
  if (tab === 'sources') topics.loadSources(state.current).catch(showError);
}

function attrsText(a) { return Object.entries(a || {}).map(([k, v]) => `${k}=${v}`).join(', '); }

// browseFilter reads the filter box: name=value pairs separated by spaces or commas (a name
// given twice lists values). null, with the error shown, when one is not name=value.
function browseFilter() {
  const out = [];
  for (const part of $('browse-filter').value.split(/[\s,]+/).filter(Boolean)) {
    const i = part.indexOf('=');
    if (i <= 0) {
      showError(new Error(`filter: "${part}" is not name=value`));
      return null;
    }
    out.push([part.slice(0, i), part.slice(i + 1)]);
  }
  return out;
}

async function loadBrowse() {
  const id = state.current;
  const cursor = state.browseCursors[state.browseCursors.length - 1];
  const filter = browseFilter();
  if (filter === null) return;
  const page = await api.browse(id, $('browse-state').value, cursor, 20, filter);
  if (page.messages.some((m) => m.replayOf)) await topics.knowTopics();
  if (id !== state.current) return;
  state.browseNext = page.nextCursor;
  $('browse-next').disabled = !page.nextCursor;
  $('browse-first').disabled = state.browseCursors.length === 1;
  $('browse-page').textContent = `page ${state.browseCursors.length}`;
  $('browse-body').replaceChildren(...page.messages.map((m) => el('tr', { dataset: { messageId: m.messageId } },
    el('td', { class: 'mono' }, m.messageId), el('td', { class: 'body', title: m.body }, m.body),
    el('td', { class: 'mono' }, attrsText(m.attributes)), el('td', { class: 'num' }, m.receiveCount),
    el('td', {}, shortTime(m.sentAt)), el('td', {}, shortTime(m.visibleAt)), el('td', {}, m.groupId || '—'),
    el('td', { class: 'replay-of' }, m.replayOf ? `#${m.replayOf.sequence} of ${topics.topicName(m.replayOf.topic)}` : '—'))));
  $('browse-empty').hidden = page.messages.length > 0;
  $('browse-empty').textContent = filter.length
    ? (page.nextCursor ? 'No matching messages among those this page examined: try the next page.' : 'No matching messages.')
    : 'No messages in this state.';
}

// ---- fifo groups, with the parked ones' release (docs/fifo.md) ----

async function loadGroups() {
  const id = state.current;
  const page = await api.listGroups(id, $('groups-state').value, state.groupsCursor);
  if (id !== state.current) return;
  state.groupsNext = page.nextCursor;
  $('groups-next').disabled = !page.nextCursor;
  $('groups-body').replaceChildren(...page.groups.map((g) => el('tr', { dataset: { group: g.groupId, state: g.state } },
    el('td', { class: 'mono' }, g.groupId), el('td', {}, el('span', { class: 'badge group-state' }, g.state)),
    el('td', { class: 'num' }, g.messages), el('td', {}, g.inFlight ? 'yes' : 'no'), el('td', { class: 'num' }, g.receiveCount),
    el('td', { class: 'mono' }, g.consumerId || '—'), // bound consumer on an exclusive queue
    el('td', { class: 'last-error' }, g.lastError || '—'),
    el('td', {}, g.state === 'parked'
      ? el('button', { type: 'button', class: 'release', onclick: () => releaseGroup(g.groupId) }, 'Release')
      : ''))));
  $('groups-empty').hidden = page.groups.length > 0;
}

async function releaseGroup(group) {
  try {
    await api.releaseGroup(state.current, group);
    banner(`Released group ${group}: its messages are delivered again from its head.`, 'info');
  } catch (err) {
    showError(err);
  }
  await loadGroups().catch(showError);
}

async function loadDLQ() {
  const id = state.current;
  const sources = dlqSources(id).map((q) => q.name);
  $('dlq-note').textContent = sources.length ? `Dead-letter queue of ${sources.join(', ')}. Visible messages with why they were dead-lettered:` : '';
  const page = await api.browse(id, 'visible', state.dlqCursors[state.dlqCursors.length - 1]);
  if (id !== state.current) return;
  state.dlqNext = page.nextCursor;
  $('dlq-next').disabled = !page.nextCursor;
  $('dlq-body').replaceChildren(...page.messages.map((m) => {
    const dl = m.deadLetter || {};
    return el('tr', { dataset: { messageId: m.messageId } },
      el('td', { class: 'mono' }, m.messageId), el('td', { class: 'body', title: m.body }, m.body),
      el('td', { class: 'reason' }, dl.reason || '—'), el('td', { class: 'source' }, dl.sourceQueue ? queueName(dl.sourceQueue) : '—'),
      el('td', {}, shortTime(dl.at)), el('td', { class: 'num' }, m.receiveCount));
  }));
  $('dlq-empty').hidden = page.messages.length > 0;
}

// ---- redrive (a move task back to the sources) ----

// loadRedrive shows the queue's latest move task, if any.
async function loadRedrive() {
  const id = state.current;
  const page = await api.moveTasks(id, 1);
  if (id !== state.current) return;
  renderRedrive(page.moveTasks[0] || null);
}

// pollRedrive follows a running task; when it ends, the dead letters it moved leave the list.
async function pollRedrive() {
  const id = state.current;
  const t = await api.getMoveTask(id, state.task.id);
  if (id !== state.current || !state.task || state.task.id !== t.id) return;
  const moved = state.task.moved;
  renderRedrive(t);
  if (t.moved !== moved || t.status !== 'running') await loadDLQ();
}

function renderRedrive(t) {
  state.task = t;
  const running = !!t && t.status === 'running';
  $('redrive-start').disabled = running;
  $('redrive-cancel').hidden = !running;
  $('redrive-status').hidden = !t;
  $('redrive-progress').textContent = '';
  if (!t) return;
  $('redrive-status').textContent = t.status;
  $('redrive-status').className = 'badge ' + t.status;
  $('redrive-status').dataset.taskId = t.id;
  const failed = t.failed ? `, ${t.failed} could not move` : '';
  const when = t.finishedAt ? ` · finished ${shortTime(t.finishedAt)}` : ` · started ${shortTime(t.startedAt)}`;
  $('redrive-progress').textContent = `${t.moved} of ${t.toMove} moved${failed} at ${t.maxMessagesPerSecond}/s${when}` + (t.error ? ` · ${t.error}` : '');
}

async function startRedrive() {
  const id = state.current;
  try {
    const t = await api.startMoveTask(id, { maxMessagesPerSecond: intField('redrive-rate') });
    if (id === state.current) renderRedrive(t);
  } catch (err) { showError(err); }
}

async function cancelRedrive() {
  const id = state.current;
  try {
    const t = await api.cancelMoveTask(id, state.task.id);
    if (id !== state.current) return;
    renderRedrive(t);
    await loadDLQ();
  } catch (err) { showError(err); }
}

// ---- subscription ----

async function loadSubscription() {
  const id = state.current;
  let sub = null;
  try { sub = await api.getSubscription(id); } catch (err) { if (!(err instanceof api.APIError && err.status === 404)) throw err; }
  if (id !== state.current) return;
  state.sub = sub;
  $('sub-none').hidden = !!sub;
  $('sub-some').hidden = !sub;
  if (!sub) return;
  renderSubscription(sub);
  await loadAttempts();
}

function renderSubscription(sub) {
  renderSubState(sub);
  for (const k of ['endpoint', 'batchSize', 'batchWindowMs', 'maxInFlight', 'timeoutSeconds']) $('sub-' + k).value = sub[k];
  $('sub-meta').textContent = `${sub.slug} · created ${shortTime(sub.createdAt)} · updated ${shortTime(sub.updatedAt)}`;
  renderSigning(sub);
}

// renderSigning shows how pushes are signed and authenticated: an ed25519 subscription's
// public key is what its receivers verify with, so it is shown in full (it is no secret).
function renderSigning(sub) {
  const parts = [sub.signing === 'ed25519' ? `Signed ed25519 (v1a) · public key ${sub.signingPublicKey}` : 'Signed hmac (v1)'];
  if (sub.auth && sub.auth.type === 'oidc') parts.push(`OIDC token for audience ${sub.auth.audience || sub.endpoint}`);
  $('sub-signing').textContent = parts.join(' · ');
}

// renderSubState shows the state (active, paused, or disabled with its reason and a Resume
// button) and, when the answer carries it (GET does, PATCH does not), the endpoint's health.
function renderSubState(sub) {
  const disabled = sub.state === 'disabled';
  const st = disabled ? 'disabled' : sub.paused ? 'paused' : 'active';
  $('sub-status').textContent = st;
  $('sub-status').className = 'badge ' + st;
  $('sub-toggle').textContent = sub.paused ? 'Resume' : 'Pause';
  $('sub-toggle').hidden = disabled;
  $('sub-resume').hidden = !disabled;
  $('sub-disabled-reason').hidden = !disabled;
  $('sub-disabled-reason').textContent = disabled ? `Disabled ${shortTime(sub.disabledAt)}: ${sub.disabledReason}` : '';
  if (sub.health) renderHealth(sub.health, sub.maxInFlight);
}

const pct = (r) => (r == null ? '—' : `${Math.round(r * 1000) / 10}%`);

function renderHealth(h, maxInFlight) {
  const throttled = h.throttledUntil != null;
  const kind = throttled ? 'throttled' : h.consecutiveFailures > 0 ? 'failing' : h.attempts24h === 0 ? 'idle' : 'healthy';
  $('sub-health').textContent = `${kind} · ${pct(h.successRate5m)} (5 min) · ${pct(h.successRate24h)} (24 h)`;
  $('sub-health').className = 'badge ' + kind;
  const parts = [`${h.consecutiveFailures} consecutive failures`, `flow-control limit ${h.flowControlLimit} of ${maxInFlight}`];
  if (throttled) parts.push(`throttled until ${shortTime(h.throttledUntil)}`);
  if (h.lastSuccessAt) parts.push(`last success ${shortTime(h.lastSuccessAt)}`);
  if (h.lastError) parts.push(`last error ${h.lastError.status ?? 'no response'} ${h.lastError.error}: ${h.lastError.message} (${shortTime(h.lastError.at)})`);
  $('sub-health-detail').textContent = parts.join(' · ');
}

// refreshSubState re-reads the subscription for its state and health alone, leaving the
// settings form as the user may be editing it.
async function refreshSubState() {
  const id = state.current;
  let sub;
  try { sub = await api.getSubscription(id); } catch (err) {
    if (err instanceof api.APIError && err.status === 404) return; // deleted meanwhile
    throw err;
  }
  if (id !== state.current || !state.sub) return;
  state.sub = sub;
  renderSubState(sub);
}

async function loadAttempts() {
  const id = state.current;
  const res = await api.attempts(id);
  if (id !== state.current) return;
  $('attempts-body').replaceChildren(...res.attempts.map((a) => el('tr', { dataset: { attemptId: a.attemptId } },
    el('td', {}, shortTime(a.at)), el('td', { class: 'mono' }, a.attemptId), el('td', { class: 'num' }, a.messageIds.length),
    el('td', { class: 'num' }, a.statusCode == null ? '—' : a.statusCode), el('td', { class: 'num' }, a.latencyMs + ' ms'),
    el('td', { class: 'outcome-' + a.outcome }, a.outcome), el('td', {}, a.error ? `${a.error}${a.detail ? ': ' + a.detail : ''}` : '—'))));
  $('attempts-empty').hidden = res.attempts.length > 0;
}

const intField = (id) => Number($(id).value);

async function subAction(fn) {
  try {
    const sub = await fn();
    if (sub) { state.sub = sub; renderSubscription(sub); }
    return sub;
  } catch (err) { showError(err); return null; }
}

async function saveSettings(ev) {
  ev.preventDefault();
  try {
    const q = await api.updateQueue(state.current, { maxMessageBytes: intField('settings-maxbytes') });
    $('settings-maxbytes').dataset.shown = '';
    renderQueueHeader(q);
    banner('Settings saved.', 'info');
  } catch (err) { showError(err); }
}

function bindSubscription() {
  $('sub-create-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const sub = await subAction(() => api.createSubscription(state.current, {
      endpoint: $('sub-create-endpoint').value.trim(), batchSize: intField('sub-create-batch'), timeoutSeconds: intField('sub-create-timeout'),
    }));
    if (sub) { await loadSubscription().catch(showError); showSecret(sub.signingSecret); }
  });
  $('sub-edit-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const sub = await subAction(() => api.updateSubscription(state.current, {
      endpoint: $('sub-endpoint').value.trim(), batchSize: intField('sub-batchSize'), batchWindowMs: intField('sub-batchWindowMs'),
      maxInFlight: intField('sub-maxInFlight'), timeoutSeconds: intField('sub-timeoutSeconds'),
    }));
    if (sub) banner('Subscription saved.', 'info');
  });
  $('sub-toggle').addEventListener('click', () => subAction(() => api.updateSubscription(state.current, { paused: !state.sub.paused })));
  $('sub-resume').addEventListener('click', async () => {
    // A disabled subscription resumes with PATCH {"state":"active"}; GET then shows the new health.
    if (await subAction(() => api.updateSubscription(state.current, { state: 'active' }))) await refreshSubState().catch(showError);
  });
  $('sub-rotate').addEventListener('click', async () => {
    const sub = await subAction(() => api.rotateSecret(state.current));
    if (sub) showSecret(sub.signingSecret); // subAction showed the new public key of an ed25519 one
  });
  $('sub-delete').addEventListener('click', async () => {
    if (!confirm('Delete this subscription? Pushes stop at once.')) return;
    try { await api.deleteSubscription(state.current); await loadSubscription(); } catch (err) { showError(err); }
  });
  $('secret-dismiss').addEventListener('click', () => { $('secret-value').textContent = ''; $('secret-box').hidden = true; });
  $('attempts-refresh').addEventListener('click', () => loadAttempts().catch(showError));
}

// showSecret shows a signing secret until dismissed; it is kept nowhere else.
function showSecret(secret) {
  $('secret-value').textContent = secret;
  $('secret-box').hidden = false;
}

// ---- send ----

function parseAttrs(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const i = line.indexOf('=');
    if (i < 1) throw new Error(`attribute line "${line}": want name=value`);
    out[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return out;
}

async function sendMessage(ev) {
  ev.preventDefault();
  const q = state.byId.get(state.current);
  try {
    const m = { body: $('send-body').value };
    const attrs = parseAttrs($('send-attrs').value);
    if (Object.keys(attrs).length) m.attributes = attrs;
    const delay = intField('send-delay');
    if (delay) m.delaySeconds = delay;
    if (q && q.type === 'fifo') m.groupId = $('send-group').value;
    const res = await api.send(state.current, [m]);
    if (res.failed.length) {
      const e = res.failed[0].error;
      banner(`${e.code}: ${e.message}${e.details && e.details.field ? ` (field ${e.details.field})` : ''}`);
      return;
    }
    const sent = res.messages[0];
    $('send-result').textContent = `Sent ${sent.messageId}${sent.duplicate ? ' (duplicate of an earlier send)' : ''}.`;
    $('send-result').dataset.messageId = sent.messageId;
  } catch (err) { showError(err); }
}

// ---- wiring ----

function bind() {
  $('signin-form').addEventListener('submit', (ev) => { ev.preventDefault(); signIn($('signin-token').value.trim()); });
  $('signout').addEventListener('click', () => signOut('Signed out.'));
  $('nav-queues').addEventListener('click', openQueues);
  $('create-form').addEventListener('submit', createQueue);
  $('settings-form').addEventListener('submit', saveSettings);
  for (const b of document.querySelectorAll('#view-queue .tabs button')) b.addEventListener('click', () => selectTab(b.dataset.tab));
  $('browse-state').addEventListener('change', () => { state.browseCursors = [null]; loadBrowse().catch(showError); });
  $('browse-filter').addEventListener('change', () => { state.browseCursors = [null]; loadBrowse().catch(showError); });
  $('browse-refresh').addEventListener('click', () => loadBrowse().catch(showError));
  $('groups-refresh').addEventListener('click', () => { state.groupsCursor = undefined; loadGroups().catch(showError); });
  $('groups-state').addEventListener('change', () => { state.groupsCursor = undefined; loadGroups().catch(showError); });
  $('groups-next').addEventListener('click', () => { state.groupsCursor = state.groupsNext; loadGroups().catch(showError); });
  $('browse-first').addEventListener('click', () => { state.browseCursors = [null]; loadBrowse().catch(showError); });
  $('browse-next').addEventListener('click', () => { state.browseCursors.push(state.browseNext); loadBrowse().catch(showError); });
  $('dlq-refresh').addEventListener('click', () => { state.dlqCursors = [null]; loadDLQ().catch(showError); });
  $('dlq-next').addEventListener('click', () => { state.dlqCursors.push(state.dlqNext); loadDLQ().catch(showError); });
  $('send-form').addEventListener('submit', sendMessage);
  $('redrive-start').addEventListener('click', startRedrive);
  $('redrive-cancel').addEventListener('click', cancelRedrive);
  bindSubscription();
  topics.init({ el, banner, showError, show, schedule, stopPolling, setText, shortTime, parseAttrs, refreshQueues, openQueue, queues: () => state.queues });
  $('nav-topics').addEventListener('click', topics.openTopics);
}

bind();
if (api.token()) openQueues(); else show('signin');
