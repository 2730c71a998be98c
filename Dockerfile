# One image for every runsync role: the worker, the simulator, one-off commands.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY jobs ./jobs
COPY schemas ./schemas
COPY policies ./policies
COPY bin ./bin
# npm ci builds dist/ (the prepare script); the check fails the build if it did not.
RUN npm ci --no-audit --no-fund && test -f dist/src/cli/main.js && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
# The warehouse lives on the volume, owned by the user runsync runs as; /app stays root's.
ENV RUNSYNC_WAREHOUSE_DIR=/data/warehouse
WORKDIR /app
COPY --from=build /app /app
# A named volume mounted at /data takes this directory's owner, so runsync can write it.
RUN mkdir -p /data/warehouse && chown -R node:node /data
VOLUME /data
USER node
# node runs runsync itself (no npm or shell in between), so SIGTERM from `docker stop` reaches
# it. Run the container with an init (compose: `init: true`, docker run: `--init`) so that a
# second signal, which runsync leaves to the system's default action, ends it at once too.
ENTRYPOINT ["node", "bin/runsync.js"]
STOPSIGNAL SIGTERM
