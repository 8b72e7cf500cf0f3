// The benchmark graph: one node that echoes the last message. Plain CommonJS, like a deployment's source.
'use strict';
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');

exports.echo = new StateGraph(MessagesAnnotation)
  .addNode('echo', (state) => {
    const last = state.messages[state.messages.length - 1];
    return { messages: [{ role: 'assistant', content: typeof last.content === 'string' ? last.content : JSON.stringify(last.content) }] };
  })
  .addEdge(START, 'echo')
  .addEdge('echo', END)
  .compile();
