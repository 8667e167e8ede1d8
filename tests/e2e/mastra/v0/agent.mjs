// One Mastra 0.x agent run with the real packages, exported to Bench: the agent's mock model (the
// AI SDK's) asks for the weather tool, then answers. Mastra's AI tracing hands the run's spans to
// @mastra/otel-exporter, which sends them with the OTLP/HTTP protobuf exporter given to it; that
// exporter reads OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_EXPORTER_OTLP_HEADERS. Usage: node agent.mjs
import { Mastra } from "@mastra/core/mastra";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { OtelExporter } from "@mastra/otel-exporter";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { MockLanguageModelV2 } from "ai/test";
import { z } from "zod";

let step = 0;
const model = new MockLanguageModelV2({
  provider: "openai.chat",
  modelId: "gpt-4.1-mini",
  doGenerate: async () => (step++ === 0
    ? { content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather",
                    input: JSON.stringify({ city: "Lisbon" }) }],
        finishReason: "tool-calls", warnings: [],
        usage: { inputTokens: 1000, outputTokens: 50, totalTokens: 1050 } }
    : { content: [{ type: "text", text: "Sunny in Lisbon, 24 degrees." }],
        finishReason: "stop", warnings: [],
        usage: { inputTokens: 1200, outputTokens: 30, totalTokens: 1230 } }),
});
const weather = createTool({
  id: "weather",
  description: "Weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ context }) => ({ city: context.city, celsius: 24, sky: "sunny" }),
});
const mastra = new Mastra({
  agents: { weather: new Agent({ name: "weather", model, tools: { weather },
                                 instructions: "You answer weather questions." }) },
  telemetry: { enabled: false },  // the deprecated OTel telemetry, which needs `mastra dev`
  observability: { configs: { otel: {
    serviceName: "weather-agent",
    // Given its exporter, OtelExporter 0.3 starts at the first span without a dynamic import, so
    // a short run's spans are queued before shutdown flushes them. It still wants a provider.
    exporters: [new OtelExporter({ exporter: new OTLPTraceExporter(), provider: { custom: {
      endpoint: process.env.OTEL_EXPORTER_OTLP_ENDPOINT } } })],
  } } },
});
const result = await mastra.getAgent("weather").generate("What is the weather in Lisbon?",
                                                         { maxSteps: 3 });
await mastra.shutdown();  // flushes the exporter
console.log(result.text);
