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
import { weatherModel } from "../../weather_model.mjs";
import { z } from "zod";

const model = weatherModel(MockLanguageModelV3);
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
