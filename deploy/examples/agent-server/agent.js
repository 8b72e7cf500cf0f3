// Example graphs for the agent-server service of docker-compose.yml (profile "examples"), mounted read-only at
// /graphs with GRAPHS_CONFIG=/graphs/langgraph.json. Plain CommonJS, as a deployment's source would be:
// '@langchain/langgraph' and '@langchain/core' resolve from the image's node_modules (the agent server falls back
// to its own node_modules for bare imports a graph's folder cannot resolve).
'use strict';
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
const { AIMessage } = require('@langchain/core/messages');

const lastText = (state) => {
  const m = state.messages[state.messages.length - 1];
  return typeof m.content === 'string' ? m.content : JSON.stringify(m.content);
};

/** Two steps: "think" then "answer" (no model is called). */
exports.agent = new StateGraph(MessagesAnnotation)
  .addNode('think', (state) => ({ messages: [{ role: 'assistant', content: `thought: ${lastText(state)}` }] }))
  .addNode('answer', (state) => ({ messages: [{ role: 'assistant', content: `echo: ${lastText(state).replace(/^thought: /, '')}` }] }))
  .addEdge(START, 'think')
  .addEdge('think', 'answer')
  .addEdge('answer', END)
  .compile();

/** One node that echoes the last message. */
exports.echo = new StateGraph(MessagesAnnotation)
  .addNode('echo', (state) => ({ messages: [new AIMessage(lastText(state))] }))
  .addEdge(START, 'echo')
  .addEdge('echo', END)
  .compile();
