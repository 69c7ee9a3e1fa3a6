/* routes_webui.h: the web UI's routes (api/routes_webui.c): its static files at / and
 * the aggregate reads it needs at 100,000 trials (overview counts and best trial, a
 * sorted and filtered trial page, downsampled chart series, a parameter sample).
 * routes.c puts WEBUI_ROUTES at the end of its table. */
#ifndef TRIALQ_ROUTES_WEBUI_H
#define TRIALQ_ROUTES_WEBUI_H

#include "api/routes.h"

void h_webui_file(struct req *q);
void h_webui_overview(struct req *q);
void h_webui_trials(struct req *q);
void h_webui_charts(struct req *q);
void h_webui_params(struct req *q);
void h_webui_importance(struct req *q);
void h_webui_compare(struct req *q); /* api/routes_compare.c */

/* Entries of routes.c's table (struct route: method, pattern, flags, handler). The
 * static files take every one-segment GET that no other route takes. */
#define WEBUI_ROUTES                                                         \
    {EVHTTP_REQ_GET, API_PREFIX "/webui/overview", 0, h_webui_overview, 0},     \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/trials", 0, h_webui_trials, 0},     \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/charts", 0, h_webui_charts, 0},     \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/params", 0, h_webui_params, 0},     \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/importance", 0, h_webui_importance, 0}, \
        {EVHTTP_REQ_GET, API_PREFIX "/webui/compare", 0, h_webui_compare, 0},       \
        {EVHTTP_REQ_GET, "/", 0, h_webui_file, 0}, {EVHTTP_REQ_GET, "/:file", 0, h_webui_file, 0}

#endif
