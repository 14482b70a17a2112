// Streams a chat completion from a pel sim with the official openai npm client and prints
// one JSON line: the text received, the chunk count and the usage block. Usage:
//   node stream.mjs http://127.0.0.1:PORT/v1
import OpenAI from "openai";

const baseURL = process.argv[2];
const client = new OpenAI({ baseURL, apiKey: "pel-sim-needs-no-key", maxRetries: 0, timeout: 30000 });

const stream = await client.chat.completions.create({
  model: "llama-3-8b",
  messages: [{ role: "user", content: "say something nice about roofline models" }],
  max_tokens: 12,
  stream: true,
  stream_options: { include_usage: true },
});
let text = "";
let chunks = 0;
let usage = null;
let finish = null;
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    if (c.delta?.content) { text += c.delta.content; chunks++; }
    if (c.finish_reason) finish = c.finish_reason;
  }
}
const models = await client.models.list();
console.log(JSON.stringify({ text, chunks, usage, finish, models: models.data.map((m) => m.id) }));
