// One Mastra 1.x agent run with the real packages, exported to Bench: the agent's mock model (the
// AI SDK's) asks for the weather tool, then answers. @mastra/observability traces the run and
// @mastra/otel-exporter sends it over OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_ENDPOINT, the
// OTLP exporter adding OTEL_EXPORTER_OTLP_HEADERS (X-Bench-Key=...). Usage: node agent.mjs
import { Mastra } from "@mastra/core";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";

const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
let step = 0;
const model = new MockLanguageModelV3({
  provider: "openai.chat",
  modelId: "gpt-4.1-mini",
  doGenerate: async () => (step++ === 0
    ? { content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather",
                    input: JSON.stringify({ city: "Lisbon" }) }],
        finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage: usage(1000, 50),
        warnings: [] }
    : { content: [{ type: "text", text: "Sunny in Lisbon, 24 degrees." }],
        finishReason: { unified: "stop", raw: "stop" }, usage: usage(1200, 30), warnings: [] }),
});
const weather = createTool({
  id: "weather",
  description: "Weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, celsius: 24, sky: "sunny" }),
});
const mastra = new Mastra({
  agents: { weather: new Agent({ id: "weather", name: "weather", model, tools: { weather },
                                 instructions: "You answer weather questions." }) },
  observability: new Observability({ configs: { otel: {
    serviceName: "weather-agent",
    exporters: [new OtelExporter({ provider: { custom: {
      endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT, protocol: "http/protobuf" } } })],
  } } }),
});
const result = await mastra.getAgent("weather").generate("What is the weather in Lisbon?",
                                                         { maxSteps: 3 });
await mastra.shutdown();  // flushes the exporter
console.log(result.text);
