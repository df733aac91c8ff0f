Feature: A copy that fails the quality gate is never charged
  Every copy is measured before it is sent: it must look like the user's video and still
  differ from it, and from the order's other copies, for a matcher. Each copy's picture is
  cropped a little at the frame's edge, where a matcher sees the most change and a viewer none,
  every copy of an order at another place round the edge. A copy that misses is rendered again
  with its crop moved to another spot of the edge. A copy that misses on its first render and
  on both re-renders is given up: it is not sent, its coins go back at once, and the user is
  told why.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 5              |
      | 5      | 4              |
      | 10     | 3              |
    And the user holds 50 coins

  Scenario: A given-up copy is returned at once and the rest are paid as they arrive
    Given the user has ordered 5 copies
    And worker "A" has taken the job
    And worker "A" has rendered copies 1, 2, 3 and 4
    When worker "A" gives up copy 5 because every render stayed too close to the source
    Then the user is told copy 5 could not be made because it matched the source, and 4 coins were returned
    And the user's coins are:
      | available | set aside | spent | expired |
      | 34        | 16        | 0     | 0       |
    When worker "A" reports the job finished with receipt "done-1"
    And the user receives copies 1, 2, 3 and 4
    Then the order is done
    And the user's coins are:
      | available | set aside | spent | expired |
      | 34        | 0         | 16    | 0       |

  Scenario: A copy given up twice (a retried report) is returned once
    Given the user has ordered 5 copies
    And worker "A" has taken the job
    When worker "A" gives up copy 2 because every render stayed too close to the source
    And worker "A" gives up copy 2 because every render stayed too close to the source
    Then the user's coins are:
      | available | set aside | spent | expired |
      | 34        | 16        | 0     | 0       |
