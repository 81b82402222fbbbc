// smarthole's live view: one WebSocket brings every committed event, from the id this page
// last saw; each page asks the server for the fragments an event changed and swaps them in.
// The server renders all HTML (escaped, Markdown made safe); this script never builds HTML
// from data, it only places what the server sent.

const main = document.querySelector("main");
const connection = document.querySelector('[data-testid="connection-status"]');
const daemon = document.querySelector('[data-testid="daemon-status"]');

// Times in the reader's own zone: the server writes UTC (it cannot know the browser's zone),
// and each <time data-local> is rewritten here as it arrives: "clock" is 06:53 today and its
// date on another day, "date" always has its date.
const pad = (n) => String(n).padStart(2, "0");
function localText(date, kind) {
  const clock = `${pad(date.getHours())}:${pad(date.getMinutes())}`;
  if (kind === "clock" && date.toDateString() === new Date().toDateString()) return clock;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${clock}`;
}
function localize(root) {
  const times = root.matches?.("time[data-local]") ? [root] : root.querySelectorAll("time[data-local]");
  for (const time of times) {
    const date = new Date(time.dateTime);
    if (Number.isNaN(date.getTime())) continue;
    time.textContent = localText(date, time.dataset.local);
    time.title = date.toString();
  }
}
localize(document);
new MutationObserver((changes) => {
  for (const change of changes) {
    for (const node of change.addedNodes) if (node.nodeType === Node.ELEMENT_NODE) localize(node);
  }
}).observe(document.body, { childList: true, subtree: true });

let lastEvent = Number(main.dataset.lastEvent || 0);
let seen = 0;
let attempts = 0;
let everConnected = false;

function showConnection(state) {
  connection.dataset.state = state;
  connection.textContent = state;
}

function showDaemon(running) {
  daemon.dataset.running = running ? "true" : "false";
  daemon.textContent = running ? "daemon running" : "daemon stopped: messages wait in the inbox";
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/api/events/socket?after=${lastEvent}`);
  socket.addEventListener("open", () => {
    attempts = 0;
    showConnection("connected");
    if (everConnected) page.refresh(); // back after a break: catch up with anything missed
    everConnected = true;
  });
  socket.addEventListener("message", (message) => {
    const item = JSON.parse(message.data);
    if (item.type === "event") receive(item.event);
    else if (item.type === "daemon") {
      showDaemon(item.running);
      page.onDaemon?.(item.running);
    }
  });
  socket.addEventListener("close", () => {
    showConnection("disconnected");
    attempts += 1;
    setTimeout(connect, Math.min(200 * 2 ** attempts, 3000));
  });
}

function receive(event) {
  if (event.id <= lastEvent) return; // already seen: a resumed stream never repeats one
  lastEvent = event.id;
  seen += 1;
  connection.dataset.lastEvent = String(lastEvent);
  connection.dataset.eventsSeen = String(seen);
  page.onEvent(event);
}

// -- fetching and placing fragments -------------------------------------------------------

async function getJSON(url) {
  const response = await fetch(url, { headers: { accept: "application/json" } });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.json();
}

function nodes(html) {
  const template = document.createElement("template");
  template.innerHTML = html;
  return template.content;
}

function place(slot, html) {
  const open = new Set([...slot.querySelectorAll("details[open][data-key]")].map((d) => d.dataset.key));
  slot.replaceChildren(nodes(html));
  for (const details of slot.querySelectorAll("details[data-key]")) {
    if (open.has(details.dataset.key)) details.open = true;
  }
}

// Runs `work` once soon for any number of calls; a call while it runs makes it run again.
function coalesced(work) {
  let running = false;
  let again = false;
  const run = async () => {
    if (running) { again = true; return; }
    running = true;
    try {
      do { again = false; await work(); } while (again);
    } catch (error) {
      console.warn("smarthole: refresh failed", error);
    } finally {
      running = false;
    }
  };
  return () => queueMicrotask(run);
}

async function postForm(url, body, files) {
  const form = new FormData();
  for (const [key, value] of Object.entries(body)) {
    if (value !== null && value !== undefined) form.append(key, String(value));
  }
  for (const file of files) form.append("file", file, file.name);
  const response = await fetch(url, { method: "POST", headers: { accept: "application/json" }, body: form });
  let data = {};
  try { data = await response.json(); } catch { /* no body */ }
  if (!response.ok) throw new Error(data.error || `the server answered ${response.status}`);
  return data;
}

async function postJSON(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body ?? {}),
  });
  let data = {};
  try { data = await response.json(); } catch { /* no body */ }
  if (!response.ok) throw new Error(data.error || `the server answered ${response.status}`);
  return data;
}

// -- the pages ------------------------------------------------------------------------------

// Events that end what a message sent from the composer waits for: its turn ended, or the
// turn now waits for the person (a question is a completed turn; an approval waits).
const ENDS = ["turn_completed", "turn_failed", "duplicate_skipped", "approval_requested", "command_run"];

function listPage(fragmentUrl, wanted) {
  const slot = main.querySelector('[data-live="list"]');
  const refresh = coalesced(async () => place(slot, (await getJSON(fragmentUrl())).html));
  return { refresh, onEvent: (event) => { if (wanted(event)) refresh(); } };
}

function conversationsPage() {
  const number = main.dataset.pageNumber || "1";
  return listPage(() => `/fragments/conversations?page=${number}`, (event) => event.conversation);
}

// A list page whose buttons post an action and say its answer in the page's notice.
function actionPage(fragmentUrl, wanted, buttons, actionUrl, noticeId) {
  const page = listPage(fragmentUrl, wanted);
  const notice = main.querySelector(`[data-testid="${noticeId}"]`);
  main.addEventListener("click", async (click) => {
    const button = click.target.closest(buttons);
    if (!button) return;
    button.disabled = true;
    try {
      notice.textContent = (await postJSON(actionUrl(button.dataset))).message;
    } catch (error) {
      notice.textContent = error.message;
    }
    notice.hidden = false;
    page.refresh();
  });
  return page;
}

function tasksPage() {
  return actionPage(
    () => "/fragments/tasks",
    (event) => /^(task_|agent_turn_)/.test(event.type),
    '[data-testid="task-abort"]',
    ({ task }) => `/api/tasks/${encodeURIComponent(task)}/abort`,
    "task-notice",
  );
}

function channelsPage() {
  const page = listPage(
    () => "/fragments/channels",
    (event) => /^(channel_|bridge_|delivery_|mail_refused|reply_written)/.test(event.type),
  );
  return { ...page, onDaemon: page.refresh }; // a channel runs only while its daemon does
}

function schedulesPage() {
  return actionPage(
    () => "/fragments/schedules",
    (event) => /^(schedule_|turn_completed)/.test(event.type),
    "button[data-action][data-schedule]",
    ({ schedule, action }) => `/api/schedules/${encodeURIComponent(schedule)}/${action}`,
    "schedule-notice",
  );
}

// Keeps a scrolling pane at its newest content while the person is at its end; when they
// have scrolled up, `onNews` is told instead (the pane does not jump under their eyes).
function following(pane, onNews = () => {}) {
  let atEnd = true;
  const end = () => { pane.scrollTop = pane.scrollHeight; };
  pane.addEventListener("scroll", () => {
    atEnd = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 40;
  });
  const grown = new ResizeObserver(() => { if (atEnd) end(); });
  for (const child of pane.children) grown.observe(child);
  end();
  return {
    get atEnd() { return atEnd; },
    end() { atEnd = true; end(); },
    changed() { if (atEnd) end(); else onNews(); },
  };
}

function conversationPage() {
  let id = main.dataset.conversation; // "" on a new conversation's page, until it exists
  const form = main.querySelector('[data-testid="composer-form"]');
  const composer = main.querySelector('[data-testid="composer"]');
  const send = main.querySelector('[data-testid="send"]');
  const note = main.querySelector('[data-testid="composer-note"]');
  const attach = main.querySelector('[data-testid="attach"]');
  const picker = main.querySelector('[data-testid="attach-input"]');
  const chosen = main.querySelector('[data-testid="attached-files"]');
  let files = []; // the attachments of the message being written
  const showFiles = () => {
    chosen.textContent = files.length ? `Attached: ${files.map((f) => f.name).join(", ")}` : "";
    composer.required = files.length === 0;
  };
  const addFiles = (list) => {
    files = files.concat(Array.from(list));
    showFiles();
  };
  attach.addEventListener("click", () => picker.click());
  picker.addEventListener("change", () => {
    addFiles(picker.files);
    picker.value = "";
  });
  form.addEventListener("dragover", (drag) => {
    drag.preventDefault();
    form.classList.add("dropping");
  });
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (drop) => {
    drop.preventDefault();
    form.classList.remove("dropping");
    addFiles(drop.dataTransfer.files);
  });
  const turns = main.querySelector(".turns");
  const pane = main.querySelector('[data-testid="human-pane"]');
  const news = main.querySelector('[data-testid="new-messages"]');
  const human = following(pane, () => { news.hidden = false; });
  const team = following(main.querySelector(".team-side"));
  pane.addEventListener("scroll", () => { if (human.atEnd) news.hidden = true; });
  news.addEventListener("click", () => { news.hidden = true; human.end(); });
  let teamTurn = main.dataset.teamTurn; // "": follow the current turn
  let fromTurn = Infinity; // the earliest human turn an event touched since the last refresh
  let pending = null; // the id of the message sent from here, until its turn ends
  let arrived = null; // while a send waits for its answer: the events that came meanwhile

  const updateComposer = () => {
    const busy = main.dataset.state === "running" || pending !== null;
    composer.disabled = busy;
    send.disabled = busy;
    attach.disabled = busy;
  };

  const apply = (live) => {
    const before = pane.textContent;
    for (const { turn, html } of live.turns) {
      const existing = turns.querySelector(`.human-turn[data-turn="${turn}"]`);
      if (existing) existing.replaceWith(nodes(html));
      else turns.append(nodes(html));
    }
    if (live.turns.length) main.querySelector('[data-testid="human-empty"]')?.remove();
    place(main.querySelector(".bar-slot"), live.bar);
    place(main.querySelector(".team-slot"), live.team);
    place(main.querySelector(".approvals-slot"), live.approvals);
    if (document.activeElement?.dataset?.testid !== "turn-picker") {
      place(main.querySelector(".picker-slot"), live.picker);
    }
    main.dataset.state = live.state;
    main.dataset.turn = String(live.turn);
    const title = main.querySelector('[data-testid="conversation-title"]');
    if (title) document.title = `${title.textContent} · smarthole`;
    updateComposer();
    if (pane.textContent !== before) human.changed();
    team.changed();
  };

  const refresh = coalesced(async () => {
    if (!id) return;
    const since = Number.isFinite(fromTurn) ? fromTurn : Number(main.dataset.turn || 1);
    fromTurn = Infinity;
    const asked = id;
    const live = await getJSON(`/c/${asked}/live?from_turn=${since}&turn=${teamTurn}`);
    if (asked === id) apply(live); // not if the page moved on meanwhile (/new)
  });

  // The first message of a new conversation made it: this page becomes its page, in place.
  const showNewConversation = (conversation) => {
    id = conversation;
    main.dataset.conversation = id;
    history.pushState({ conversation: id }, "", `/c/${id}`);
    composer.placeholder = "Write a follow-up";
    fromTurn = 1;
    refresh();
  };
  addEventListener("popstate", () => location.reload()); // back to /new: show what the URL says

  // A command that moved the channel: /resume goes to its conversation; /new ended this one,
  // so the page becomes the new conversation's, which its text (if any) starts.
  const followCommand = (event) => {
    if (event.conversation) {
      location.assign(`/c/${event.conversation}`);
      return;
    }
    id = "";
    main.dataset.conversation = "";
    turns.replaceChildren();
    main.querySelector(".bar-slot").replaceChildren();
    history.pushState(null, "", `/new?channel=${encodeURIComponent(main.dataset.channel || "")}`);
    composer.placeholder = "Write the first message";
    note.textContent = event.next ? "" : "Your next message starts a new conversation.";
    pending = event.next || null;
    updateComposer();
  };

  // What an event of the message sent from here says about it.
  const track = (event) => {
    if (pending === null || event.message_id !== pending) return;
    if (!id && event.conversation) showNewConversation(event.conversation);
    else if (event.type === "command_run" && event.conversation !== id) {
      followCommand(event);
      return;
    }
    if (event.type === "message_rejected") {
      note.textContent = `Not sent: ${event.reason}`;
      pending = null;
    } else if (ENDS.includes(event.type)) { // the turn ended, or it waits for the person
      note.textContent = "";
      pending = null;
    } else if (event.type === "turn_started") {
      note.textContent = "";
    }
    updateComposer();
  };

  const onEvent = (event) => {
    // The daemon may take the message, and its events reach this page, before the answer
    // that names it: they are kept until then (every event comes once, in order).
    if (arrived !== null && event.message_id) arrived.push(event);
    track(event);
    if (id && event.conversation === id) {
      fromTurn = Math.min(fromTurn, event.turn ?? Number(main.dataset.turn || 1));
      refresh();
    }
  };

  form.addEventListener("submit", async (submit) => {
    submit.preventDefault();
    const text = composer.value;
    if (!text.trim() && !files.length) return;
    const body = id
      ? { text, conversation: id }
      : { text, channel: main.dataset.channel || null, new_conversation: true };
    composer.disabled = send.disabled = true;
    arrived = [];
    try {
      const answer = files.length
        ? await postForm("/api/messages", body, files)
        : await postJSON("/api/messages", body);
      pending = answer.id;
      composer.value = "";
      files = [];
      showFiles();
      note.textContent = "Sent; waiting for the daemon to take it…";
      for (const event of arrived) track(event);
    } catch (error) {
      note.textContent = `Not sent: ${error.message}`;
    } finally {
      arrived = null;
    }
    updateComposer();
  });

  main.addEventListener("change", (change) => {
    if (change.target.dataset.testid !== "turn-picker") return;
    teamTurn = change.target.value;
    const url = new URL(location.href);
    if (teamTurn) url.searchParams.set("turn", teamTurn); else url.searchParams.delete("turn");
    history.replaceState(null, "", url);
    refresh();
  });

  // Approve, Always, Deny: each writes an answer file into the inbox, as `smarthole approve` does.
  main.addEventListener("click", async (click) => {
    const button = click.target.closest(".approval button[data-decision]");
    if (!button) return;
    const card = button.closest('[data-testid="approval"]');
    const said = card.querySelector('[data-testid="approval-note"]');
    const body = { decision: button.dataset.decision, always: button.dataset.always === "true" };
    if (body.decision === "deny") body.reason = card.querySelector('[data-testid="approval-reason"]').value;
    for (const other of card.querySelectorAll("button")) other.disabled = true;
    try {
      await postJSON(`/api/approvals/${encodeURIComponent(button.dataset.approval)}`, body);
      said.textContent = "Sent; waiting for the daemon to take it…";
    } catch (error) {
      said.textContent = `Not sent: ${error.message}`;
      for (const other of card.querySelectorAll("button")) other.disabled = false;
    }
  });

  // Fork from here: a new conversation holding turns 1..N; the page moves to it.
  main.addEventListener("click", async (click) => {
    const button = click.target.closest('[data-testid="fork-turn"]');
    if (!button) return;
    button.disabled = true;
    try {
      const made = await postJSON(`/api/conversations/${encodeURIComponent(id)}/fork`, { turn: Number(button.dataset.turn) });
      location.assign(`/c/${encodeURIComponent(made.conversation)}`);
    } catch (error) {
      main.querySelector('[data-testid="composer-note"]').textContent = `Not forked: ${error.message}`;
      button.disabled = false;
    }
  });

  main.addEventListener("click", async (click) => {
    const button = click.target.closest('[data-testid="load-earlier"]');
    if (!button) return;
    const first = Number(main.dataset.firstTurn || 1);
    const earlier = await getJSON(`/c/${id}/earlier?before=${first}`);
    const below = pane.scrollHeight - pane.scrollTop; // keep what the person looks at in place
    turns.prepend(nodes(earlier.html));
    pane.scrollTop = pane.scrollHeight - below;
    main.dataset.firstTurn = String(earlier.first);
    if (!earlier.earlier) button.remove();
  });

  updateComposer();
  return { refresh, onEvent };
}

const pages = {
  conversations: conversationsPage,
  conversation: conversationPage,
  tasks: tasksPage,
  schedules: schedulesPage,
  channels: channelsPage,
};
const page = (pages[main.dataset.page] || (() => ({ refresh() {}, onEvent() {} })))();
connect();
