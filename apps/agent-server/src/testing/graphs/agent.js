// Test graphs for the agent server: plain CommonJS that requires @langchain/langgraph, as a deployment's source would.
'use strict';
const { StateGraph, MessagesAnnotation, START, END, interrupt } = require('@langchain/langgraph');
const { AIMessage } = require('@langchain/core/messages');
const { z } = require('zod');

/** Waits `ms`, or rejects as soon as the run is cancelled. */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal && signal.aborted) return reject(new Error('aborted'));
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); reject(new Error('aborted')); }, { once: true });
  });
}

const lastText = (state) => {
  const m = state.messages[state.messages.length - 1];
  return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
};

/** "sleep:<ms> <text>" waits <ms> before answering; "fail" throws. */
async function think(state, config) {
  const text = lastText(state);
  const m = /^sleep:(\d+)\s*(.*)$/.exec(text);
  if (m) await sleep(Number(m[1]), config && config.signal);
  if (text === 'fail') throw new Error('the graph failed on purpose');
  return { messages: [{ role: 'assistant', content: `thought: ${m ? m[2] : text}` }] };
}

async function answer(state) {
  return { messages: [{ role: 'assistant', content: `echo: ${lastText(state).replace(/^thought: /, '')}` }] };
}

exports.agent = new StateGraph(MessagesAnnotation)
  .addNode('think', think)
  .addNode('answer', answer)
  .addEdge(START, 'think')
  .addEdge('think', 'answer')
  .addEdge('answer', END)
  .compile();

/** The benchmark's graph: one node that echoes. */
exports.echo = new StateGraph(MessagesAnnotation)
  .addNode('echo', (state) => ({ messages: [new AIMessage(lastText(state))] }))
  .addEdge(START, 'echo')
  .addEdge('echo', END)
  .compile();

/** A graph with a typed input: {count: number}. */
exports.makeCounter = () =>
  new StateGraph(z.object({ count: z.number().int(), label: z.string().optional() }))
    .addNode('inc', (s) => ({ count: s.count + 1 }))
    .addEdge(START, 'inc')
    .addEdge('inc', END)
    .compile();

/** Human in the loop: asks for approval (interrupt) before answering. */
exports.approval = new StateGraph(MessagesAnnotation)
  .addNode('ask', (state) => {
    const decision = interrupt({ question: `approve "${lastText(state)}"?` });
    return { messages: [{ role: 'assistant', content: `decision: ${decision}` }] };
  })
  .addEdge(START, 'ask')
  .addEdge('ask', END)
  .compile();
