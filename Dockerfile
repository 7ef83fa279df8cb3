# Labdeck app image for a server deployment (see docker-compose.yml).
FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 NEXT_TELEMETRY_DISABLED=1
COPY package.json package-lock.json ./
COPY prisma ./prisma
COPY prisma.config.ts ./
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production NEXT_TELEMETRY_DISABLED=1 HOST=0.0.0.0 PORT=3000 LABDECK_DATA_DIR=/var/lib/labdeck
COPY --from=build /app /app
RUN mkdir -p /var/lib/labdeck && chown node:node /var/lib/labdeck
USER node
EXPOSE 3000
CMD ["node", "dist/server.mjs"]
