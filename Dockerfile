# One image for every runsync role: the worker, the simulator, one-off commands.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY jobs ./jobs
COPY schemas ./schemas
COPY bin ./bin
RUN npm ci --no-audit --no-fund && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app /app
# A named volume mounted here takes this directory's owner, so the worker can write it.
RUN mkdir -p /warehouse && chown node:node /warehouse
USER node
# node runs runsync itself (no npm or shell in between), so SIGTERM from `docker stop` reaches
# it. Run the container with an init (compose: `init: true`, docker run: `--init`) so that a
# second signal, which runsync leaves to the system's default action, ends it at once too.
ENTRYPOINT ["node", "bin/runsync.js"]
STOPSIGNAL SIGTERM
